import CLilv
import DSP

#if canImport(Glibc)
  import Glibc
#endif

extension PluginStage {
  /// Runs the plugin over a block in place (in chunks of its buffer capacity): control values
  /// smoothed towards their targets, empty atom sequences in, bypass crossfaded, worker
  /// responses delivered, control outputs published as read-only parameters.
  /// - Realtime: safe
  public func process(_ block: StereoBlock, targets: ParameterTargets) {
    var offset = 0
    while offset < block.frames {
      let n = min(capacity, block.frames - offset)
      run(StereoBlock(left: block.left + offset, right: block.right + offset, frames: n), targets: targets)
      offset += n
    }
  }

  /// - Realtime: safe
  private func run(_ block: StereoBlock, targets: ParameterTargets) {
    let frames = block.frames
    let first = firstParameter
    // Controls: continuous ones move like built-in parameters (20 ms time constant).
    let alpha = 1 - expf(-Float(frames) / (0.020 * Float(sampleRate)))
    for i in 0..<controlInputs.count {
      let target = targets.value(first &+ i)
      var c = current[i]
      if smoothed[i] {
        let d = target - c
        let next = c + d * alpha
        c = abs(d) <= 1e-6 * max(abs(target), 1) || next == c ? target : next
      } else {
        c = target
      }
      current[i] = c
      let port = controlInputs[i]
      for k in 0..<controls.count { controls[k][port] = c }
    }
    let bypassTarget: Float = targets.value(first &+ controlInputs.count) >= 0.5 ? 1 : 0
    if bypassMix == 1 && bypassTarget == 1 { return }
    let crossfading = bypassMix != bypassTarget
    if crossfading {
      dryLeft.update(from: block.left, count: frames)
      dryRight.update(from: block.right, count: frames)
    }

    // Atom ports: an empty sequence in, a whole buffer offered out, every cycle.
    for k in 0..<instances.count {
      for (buffer, _) in atomIn[k] {
        let atom = buffer.assumingMemoryBound(to: UInt32.self)
        atom[0] = 8  // sizeof(LV2_Atom_Sequence_Body)
        atom[1] = sequenceType
        atom[2] = 0  // unit
        atom[3] = 0  // pad
      }
      for (buffer, bytes) in atomOut[k] {
        let atom = buffer.assumingMemoryBound(to: UInt32.self)
        atom[0] = UInt32(bytes - 8)
        atom[1] = chunkType
      }
    }

    // Audio in, run, audio out, per channel layout.
    if instances.count == 2 {
      audioIn[0][0].update(from: block.left, count: frames)
      audioIn[1][0].update(from: block.right, count: frames)
    } else if audioIn[0].count == 1 {
      let mono = audioIn[0][0]
      for f in 0..<frames {
        let (l, r) = (block.left[f], block.right[f])
        mono[f] = (l + r) * 0.5
      }
    } else {
      audioIn[0][0].update(from: block.left, count: frames)
      audioIn[0][1].update(from: block.right, count: frames)
    }
    for k in 0..<instances.count {
      lilv_instance_run(instances[k], UInt32(frames))
      if hasWorker[k] { features[k].worker.deliverResponses() }
    }
    if instances.count == 2 {
      block.left.update(from: audioOut[0][0], count: frames)
      block.right.update(from: audioOut[1][0], count: frames)
    } else {
      block.left.update(from: audioOut[0][0], count: frames)
      block.right.update(from: audioOut[0][1], count: frames)
    }

    // A plugin that produced a non-finite sample is muted for the block, not passed on.
    var sum: Float = 0
    for f in 0..<frames { sum += block.left[f] * 0 + block.right[f] * 0 }
    if !sum.isFinite {
      block.left.update(repeating: 0, count: frames)
      block.right.update(repeating: 0, count: frames)
    }

    if crossfading {
      var mix = bypassMix
      let step = bypassTarget > mix ? bypassStep : -bypassStep
      for f in 0..<frames {
        mix = min(max(mix + step, 0), 1)
        let (l, r, dl, dr) = (block.left[f], block.right[f], dryLeft[f], dryRight[f])
        block.left[f] = l * (1 - mix) + dl * mix
        block.right[f] = r * (1 - mix) + dr * mix
      }
      bypassMix = mix
    }

    // Control outputs of the first instance become the read-only parameters.
    let outputsFirst = first &+ controlInputs.count &+ 1
    for j in 0..<controlOutputs.count {
      targets.set(outputsFirst &+ j, controls[0][controlOutputs[j]])
    }
  }
}

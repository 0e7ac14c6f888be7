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
    let rt = self.rt
    // Controls: continuous ones move like built-in parameters (20 ms time constant); settled
    // ones cost one comparison.
    var alpha = smoothingAlpha
    if frames != smoothingFrames {
      alpha = 1 - expf(-Float(frames) / (0.020 * Float(sampleRate)))
      (smoothingAlpha, smoothingFrames) = (alpha, frames)
    }
    for i in 0..<rt.controlInputCount {
      let target = targets.value(first &+ i)
      var c = current[i]
      if target.bitPattern == c.bitPattern { continue }
      if smoothed[i] {
        let d = target - c
        let next = c + d * alpha
        c = abs(d) <= 1e-6 * max(abs(target), 1) || next == c ? target : next
      } else {
        c = target
      }
      current[i] = c
      appliedControls[i].store(c.bitPattern, ordering: .relaxed)
      let port = rt.controlInputs[i]
      rt.controls0[port] = c
      rt.controls1?[port] = c
    }
    let bypassTarget: Float = targets.value(first &+ rt.controlInputCount) >= 0.5 ? 1 : 0
    if bypassMix == 1 && bypassTarget == 1 { return }
    let crossfading = bypassMix != bypassTarget
    if crossfading {
      dryLeft.update(from: block.left, count: frames)
      dryRight.update(from: block.right, count: frames)
    }

    // Atom ports: an empty sequence in, a whole buffer offered out, every cycle.
    for i in 0..<rt.atomInputCount {
      let atom = rt.atomInputs[i].assumingMemoryBound(to: UInt32.self)
      atom[0] = 8  // sizeof(LV2_Atom_Sequence_Body)
      atom[1] = sequenceType
      atom[2] = 0  // unit
      atom[3] = 0  // pad
    }
    for i in 0..<rt.atomOutputCount {
      let (buffer, bytes) = rt.atomOutputs[i]
      let atom = buffer.assumingMemoryBound(to: UInt32.self)
      atom[0] = UInt32(bytes - 8)
      atom[1] = chunkType
    }

    // Audio in, run, audio out.
    if let inputRight = rt.inputRight {
      rt.inputLeft.update(from: block.left, count: frames)
      inputRight.update(from: block.right, count: frames)
    } else {
      let mono = rt.inputLeft
      for f in 0..<frames {
        let (l, r) = (block.left[f], block.right[f])
        mono[f] = (l + r) * 0.5
      }
    }
    lilv_instance_run(rt.instance0, UInt32(frames))
    rt.worker0?._withUnsafeGuaranteedRef { $0.deliverResponses() }
    if let instance1 = rt.instance1 {
      lilv_instance_run(instance1, UInt32(frames))
      rt.worker1?._withUnsafeGuaranteedRef { $0.deliverResponses() }
    }
    if latencyPort >= 0 { reportedLatency.store(rt.controls0[latencyPort].bitPattern, ordering: .relaxed) }
    block.left.update(from: rt.outputLeft, count: frames)
    block.right.update(from: rt.outputRight, count: frames)

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
    let outputsFirst = first &+ rt.controlInputCount &+ 1
    for j in 0..<rt.controlOutputCount {
      targets.set(outputsFirst &+ j, rt.controls0[rt.controlOutputs[j]])
    }
  }
}

import CLilv
import DSP

#if canImport(Glibc)
  import Glibc
#endif

extension PluginStage {
  /// Runs the plugin over a block in place (in chunks of its buffer capacity): control values
  /// smoothed towards their targets, the block's MIDI (or an empty sequence) on each atom input,
  /// bypass crossfaded, worker
  /// responses delivered, control outputs published as read-only parameters.
  /// - Realtime: safe
  @inline(__always)
  func processBlock(_ block: StereoBlock, targets: ParameterTargets) {
    var offset = 0
    while offset < block.frames {
      let n = min(capacity, block.frames - offset)
      run(
        StereoBlock(left: block.left + offset, right: block.right + offset, frames: n), targets: targets,
        from: offset)
      offset += n
    }
  }

  /// Runs one chunk of the block, which starts `start` frames into it.
  /// - Realtime: safe
  private func run(_ block: StereoBlock, targets: ParameterTargets, from start: Int) {
    let frames = block.frames
    let first = firstParameter
    let rt = self.rt
    // Controls: continuous ones move like built-in parameters (20 ms time constant); settled
    // ones cost one comparison.
    let live = self.live
    let alpha = live.pointee.smoothing.alpha(frames: frames)
    let applied = appliedControls
    Smoothing.advance(
      current, toward: targets, first: first, count: rt.controlInputCount, smoothed: smoothed, alpha: alpha
    ) { i, c in
      applied[i].store(c.bitPattern, ordering: .relaxed)
      let port = rt.controlInputs[i]
      rt.controls0[port] = c
      rt.controls1?[port] = c
    }
    let bypassTarget: Float = targets.value(first &+ rt.controlInputCount) >= 0.5 ? 1 : 0
    if live.pointee.bypassMix == 1 && bypassTarget == 1 { return }
    let crossfading = live.pointee.bypassMix != bypassTarget
    if crossfading {
      dryLeft.update(from: block.left, count: frames)
      dryRight.update(from: block.right, count: frames)
    }

    // Atom ports: waiting messages (at the block's first frame) and the chunk's MIDI, or an
    // empty sequence, in; a whole buffer offered out.
    let midi = live.pointee.midi
    let messageBytes = start == 0 ? gatherMessages() : 0
    for i in 0..<rt.atomInputCount {
      let (buffer, bytes) = rt.atomInputs[i]
      let atom = buffer.assumingMemoryBound(to: UInt32.self)
      atom[1] = sequenceType
      atom[2] = 0  // unit: frames
      atom[3] = 0  // pad
      var used = 16
      if messageBytes > 0 && rt.atomInputMessages[i] {
        writeMessages(messageBytes, into: buffer, bytes: bytes, used: &used)
      }
      if rt.atomInputMidi[i], let midi {
        midi._withUnsafeGuaranteedRef {
          writeMidi($0, into: buffer, bytes: bytes, used: &used, from: start, frames: frames)
        }
      }
      atom[0] = UInt32(used - 8)  // the body: unit, pad, events
    }
    for i in 0..<rt.atomOutputCount {
      let (buffer, bytes) = rt.atomOutputs[i]
      let atom = buffer.assumingMemoryBound(to: UInt32.self)
      atom[0] = UInt32(bytes - 8)
      atom[1] = chunkType
    }

    connectAudio(block)
    if cv.inputCount > 0 { cv.fill(from: start, frames: frames) }
    if let feed = live.pointee.sidechainFeed {
      feed._withUnsafeGuaranteedRef { feed in
        for i in 0..<rt.sidechainCount {
          let (buffer, channel) = rt.sidechains[i]
          feed.copy(channel: channel, from: start, count: frames, into: buffer)
        }
      }
    }

    lilv_instance_run(rt.instance0, UInt32(frames))
    rt.worker0?._withUnsafeGuaranteedRef { $0.deliverResponses() }
    if let instance1 = rt.instance1 {
      lilv_instance_run(instance1, UInt32(frames))
      rt.worker1?._withUnsafeGuaranteedRef { $0.deliverResponses() }
    }
    if rt.firstInstanceAtomOutputCount > 0 { collectMessages() }
    if latencyPort >= 0 { reportedLatency.store(rt.controls0[latencyPort].bitPattern, ordering: .relaxed) }
    if rt.instrument {
      for f in 0..<frames {
        block.left[f] += rt.outputLeft[f]
        block.right[f] += rt.outputRight[f]
      }
    } else if !rt.inPlace {
      block.left.update(from: rt.outputLeft, count: frames)
      if !rt.copiesLeftToRight { block.right.update(from: rt.outputRight, count: frames) }
    }
    if rt.copiesLeftToRight { block.right.update(from: block.left, count: frames) }
    // A plugin that produced a non-finite sample is muted for the chunk, not passed on (it
    // cannot be reset here: LV2's activate is not real-time safe).
    _ = Smoothing.silenceUnlessFinite(block)

    if crossfading {
      live.pointee.bypassMix = Smoothing.bypassFade(
        block, dryLeft: dryLeft, dryRight: dryRight, from: live.pointee.bypassMix, toward: bypassTarget,
        step: bypassStep)
    }

    // Control outputs become read-only parameters: the first instance's, then the right one's.
    let outputsFirst = first &+ rt.controlInputCount &+ 1
    for j in 0..<rt.controlOutputCount {
      targets.set(outputsFirst &+ j, rt.controls0[rt.controlOutputs[j]])
    }
    cv.publish(frames: frames, into: targets, from: outputsFirst &+ cvOutputOffset)
    if rt.hasRightOutputs {
      let right = rt.controls1 ?? rt.controls0  // one instance serving both channels
      let rightFirst = outputsFirst &+ rt.controlOutputCount
      for j in 0..<rt.controlOutputCount {
        targets.set(rightFirst &+ j, right[rt.controlOutputs[j]])
      }
    }
  }

  /// Appends to the sequence in `buffer` (`bytes` long, `used` of them filled) the MIDI events of
  /// frames `start..<start + frames`, at their frames in the chunk; events that do not fit are
  /// left out.
  /// - Realtime: safe
  @inline(__always)
  private func writeMidi(
    _ events: MidiEvents, into buffer: UnsafeMutableRawPointer, bytes: Int, used: inout Int, from start: Int,
    frames: Int
  ) {
    for e in 0..<events.count {
      let frame = Int(events.frame(e))
      guard frame >= start else { continue }
      guard frame < start + frames else { break }
      let data = events.data(e)
      let size = 16 + ((data.count + 7) & ~7)  // LV2_Atom_Event (time, atom header), then padded
      guard used + size <= bytes, let source = data.baseAddress else { break }
      let event = buffer + used
      event.storeBytes(of: Int64(frame - start), as: Int64.self)
      event.storeBytes(of: UInt32(data.count), toByteOffset: 8, as: UInt32.self)
      event.storeBytes(of: midiEventType, toByteOffset: 12, as: UInt32.self)
      (event + 16).copyMemory(from: source, byteCount: data.count)
      used += size
    }
  }

  /// Moves the messages waiting for the plugin (`setProperty`, `requestProperties`) from their
  /// ring into the scratch buffer, each 8-byte aligned, as many as fit; returns the bytes used.
  /// - Realtime: safe
  @inline(__always)
  private func gatherMessages() -> Int {
    let ring = messages.incoming
    let scratch = messages.scratch
    var used = 0
    while used + PluginMessages.maxMessageBytes <= PluginMessages.scratchBytes,
      let size = ring.read(into: scratch + used)
    {
      used += (Int(size) + 7) & ~7
    }
    return used
  }

  /// Appends the gathered messages (`messageBytes` of the scratch buffer) to the sequence in
  /// `buffer` as events at frame 0; a message that does not fit is left out.
  /// - Realtime: safe
  @inline(__always)
  private func writeMessages(
    _ messageBytes: Int, into buffer: UnsafeMutableRawPointer, bytes: Int, used: inout Int
  ) {
    let scratch = messages.scratch
    var offset = 0
    while offset + 8 <= messageBytes {
      let atomBytes = 8 + Int(scratch.load(fromByteOffset: offset, as: UInt32.self))
      let padded = (atomBytes + 7) & ~7
      guard used + 8 + padded <= bytes else { return }
      (buffer + used).storeBytes(of: Int64(0), as: Int64.self)
      (buffer + used + 8).copyMemory(from: scratch + offset, byteCount: atomBytes)
      used += 8 + padded
      offset += padded
    }
  }

  /// Passes the objects (messages) the first instance wrote on its atom outputs this run to the
  /// supervisor's ring (`propertyValues`); what does not fit is dropped.
  /// - Realtime: safe
  @inline(__always)
  private func collectMessages() {
    let rt = self.rt
    for i in 0..<rt.firstInstanceAtomOutputCount {
      let (buffer, bytes) = rt.atomOutputs[i]
      guard buffer.load(fromByteOffset: 4, as: UInt32.self) == sequenceType else { continue }
      let end = min(8 + Int(buffer.load(as: UInt32.self)), bytes)
      var offset = 16
      while offset + 16 <= end {
        let size = Int(buffer.load(fromByteOffset: offset + 8, as: UInt32.self))
        let type = buffer.load(fromByteOffset: offset + 12, as: UInt32.self)
        guard offset + 16 + size <= end else { break }
        if type == objectType || type == blankType {
          _ = messages.outgoing.write(size: UInt32(8 + size), data: buffer + offset + 8)
        }
        offset += 16 + ((size + 7) & ~7)
      }
    }
  }

  /// Gives the plugin this block's audio: its ports connected to the block's own buffers when it
  /// works in place, else copies into its buffers; a mono-in plugin of two channels gets their
  /// mean.
  /// - Realtime: safe
  @inline(__always)
  private func connectAudio(_ block: StereoBlock) {
    let rt = self.rt
    let frames = block.frames
    if rt.instrument { return }  // no input; its output stays in its own buffers
    if rt.inputRight == nil && !rt.copiesLeftToRight {
      let mono = rt.inputLeft
      for f in 0..<frames {
        let (l, r) = (block.left[f], block.right[f])
        mono[f] = (l + r) * 0.5
      }
    }
    guard rt.inPlace else {
      if let inputRight = rt.inputRight {
        rt.inputLeft.update(from: block.left, count: frames)
        inputRight.update(from: block.right, count: frames)
      } else if rt.copiesLeftToRight {
        rt.inputLeft.update(from: block.left, count: frames)
      }
      return
    }
    if rt.inputRight != nil || rt.copiesLeftToRight {
      lilv_instance_connect_port(rt.instance0, rt.portInputLeft, block.left)
    }
    if rt.inputRight != nil { lilv_instance_connect_port(rt.rightInstance, rt.portInputRight, block.right) }
    lilv_instance_connect_port(rt.instance0, rt.portOutputLeft, block.left)
    if !rt.copiesLeftToRight {
      lilv_instance_connect_port(rt.rightInstance, rt.portOutputRight, block.right)
    }
  }
}

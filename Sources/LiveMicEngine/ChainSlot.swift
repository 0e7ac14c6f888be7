import DSP
import Synchronization

/// Holds the chain the audio thread runs. A new chain is published with one atomic exchange;
/// the old one is released off the audio thread once the audio thread has moved past it.
///
/// Thread: `current` on the audio thread; `publish` and `release` on the control side.
public final class ChainSlot: @unchecked Sendable {
  private let pointer = Atomic<UInt>(0)
  /// Incremented by the audio thread at the end of every cycle.
  private let cycles = Atomic<UInt64>(0)
  /// A retained chain waiting to be crossfaded in (control → audio).
  private let incoming = Atomic<UInt>(0)
  /// The chain faded out, handed back for release (audio → control).
  private let retired = Atomic<UInt>(0)

  public init(_ chain: VoiceChain) {
    pointer.store(UInt(bitPattern: Unmanaged.passRetained(chain).toOpaque()), ordering: .releasing)
  }

  deinit {
    for raw in [
      pointer.exchange(0, ordering: .acquiringAndReleasing),
      incoming.exchange(0, ordering: .acquiringAndReleasing),
      retired.exchange(0, ordering: .acquiringAndReleasing),
    ] {
      if let p = UnsafeRawPointer(bitPattern: raw) { Unmanaged<VoiceChain>.fromOpaque(p).release() }
    }
  }

  /// Takes the chain waiting to be faded in and makes it current; returns the previous one,
  /// which the audio thread keeps running while it fades out. Nil when none is waiting.
  /// - Realtime: safe
  @inline(__always)
  func beginSwap() -> Unmanaged<VoiceChain>? {
    guard incoming.load(ordering: .relaxed) != 0 else { return nil }
    let new = incoming.exchange(0, ordering: .acquiringAndReleasing)
    let old = pointer.exchange(new, ordering: .acquiringAndReleasing)
    return Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: old)!)
  }

  /// Hands a faded-out chain back to the control side for release.
  /// - Realtime: safe
  @inline(__always)
  func finishSwap(_ old: Unmanaged<VoiceChain>) {
    retired.store(UInt(bitPattern: old.toOpaque()), ordering: .releasing)
  }

  /// Crossfades from the running chain to `chain` (prepared and warmed) on the audio thread,
  /// then releases the old chain here, off the audio thread. Blocks until the fade is done (or
  /// `timeoutMilliseconds`, after which the old chain is kept alive rather than freed under the
  /// audio thread). When audio is not running, swaps at once. Thread: control.
  public func crossfade(to chain: VoiceChain, running: Bool, timeoutMilliseconds: Int = 3000) {
    guard running else {
      let old = publish(chain)
      old.release()
      return
    }
    incoming.store(UInt(bitPattern: Unmanaged.passRetained(chain).toOpaque()), ordering: .releasing)
    var waited = 0
    while waited < timeoutMilliseconds {
      let raw = retired.exchange(0, ordering: .acquiringAndReleasing)
      if let p = UnsafeRawPointer(bitPattern: raw) {
        Unmanaged<VoiceChain>.fromOpaque(p).release()
        return
      }
      usleep(1000)
      waited += 1
    }
  }

  /// The chain to run this cycle, unretained (the slot keeps it alive until it is retired).
  /// - Realtime: safe
  @inline(__always)
  public func current() -> Unmanaged<VoiceChain> {
    let raw = pointer.load(ordering: .acquiring)
    return Unmanaged<VoiceChain>.fromOpaque(UnsafeRawPointer(bitPattern: raw)!)
  }

  /// Marks the end of a cycle: chains published before this point are no longer in use.
  /// - Realtime: safe
  @inline(__always)
  public func cycleFinished() { cycles.add(1, ordering: .releasing) }

  /// Cycles completed so far.
  public var cycleCount: UInt64 { cycles.load(ordering: .acquiring) }

  /// Publishes `chain` (already prepared and warmed) and returns the previous one, still
  /// retained: pass it to `retire` to free it off the audio thread. Thread: control.
  public func publish(_ chain: VoiceChain) -> Unmanaged<VoiceChain> {
    let raw = UInt(bitPattern: Unmanaged.passRetained(chain).toOpaque())
    let old = pointer.exchange(raw, ordering: .acquiringAndReleasing)
    return Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: old)!)
  }

  /// Frees a chain returned by `publish` once the audio thread has finished two more cycles
  /// (or at once when `running` is false). Blocks the calling (control) thread up to
  /// `timeoutMilliseconds`.
  public func retire(_ old: Unmanaged<VoiceChain>, running: Bool, timeoutMilliseconds: Int = 2000) {
    if running {
      let start = cycleCount
      var waited = 0
      while cycleCount < start + 2 && waited < timeoutMilliseconds {
        usleep(1000)
        waited += 1
      }
    }
    old.release()
  }
}

#if canImport(Glibc)
  import Glibc
#endif

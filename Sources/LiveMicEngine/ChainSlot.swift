import DSP
import Synchronization

/// Holds the chain the audio thread runs. A new chain is handed over with one atomic exchange
/// (and crossfaded in); the old one comes back to be released off the audio thread.
///
/// Thread: `current` on the audio thread; `publish` and `release` on the control side.
public final class ChainSlot: @unchecked Sendable {
  private let pointer = Atomic<UInt>(0)
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

  /// Swaps in `chain` at once and returns the previous one, still retained. Only while the
  /// audio thread is not running (see `crossfade`). Thread: control.
  func publish(_ chain: VoiceChain) -> Unmanaged<VoiceChain> {
    let raw = UInt(bitPattern: Unmanaged.passRetained(chain).toOpaque())
    let old = pointer.exchange(raw, ordering: .acquiringAndReleasing)
    return Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: old)!)
  }
}

#if canImport(Glibc)
  import Glibc
#endif

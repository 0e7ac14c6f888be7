import DSP
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// How the old and the new chain are mixed during a swap.
public enum FadeCurve: Sendable {
  /// cos/sin gains: constant power for outputs that differ (another preset, another latency).
  case equalPower
  /// 1 − t and t: constant level for outputs that are the same signal, aligned (one stage's
  /// implementation switched at the same latency); equal power would swell them by 3 dB.
  case linear
}

/// Holds the chain the audio thread runs. A new chain is handed over with one atomic exchange
/// (and crossfaded in); the old one comes back to be released off the audio thread.
///
/// The handshake, one swap at a time: the control side puts a retained chain in `incoming`;
/// the audio thread takes it (an exchange, so it and a control side reclaiming it cannot both
/// own it) only when no fade runs and `retired` is empty, makes it current and fades the old one
/// out; it then puts the old one in `retired` (which is therefore empty whenever it does); the
/// control side takes it from there (an exchange) and releases it. A control call that times out
/// leaves nothing behind that the next one cannot finish: a chain still waiting in `incoming`
/// is taken back and released (it never ran), a retired chain of an earlier swap is released,
/// and a call returns done only when the chain that its own chain replaced comes back.
///
/// Thread: `current`, `beginSwap`, `finishSwap` on the audio thread; `crossfade` on the control
/// side (calls are serialized by a lock the audio thread never touches).
public final class ChainSlot: @unchecked Sendable {
  private let pointer = Atomic<UInt>(0)
  /// A retained chain waiting to be crossfaded in (control → audio), its lowest bit set when
  /// the fade is to be linear (`FadeCurve`; a chain's address is aligned, so the bit is free).
  private let incoming = Atomic<UInt>(0)
  /// The chain faded out, handed back for release (audio → control).
  private let retired = Atomic<UInt>(0)

  /// What the control side knows of the swaps it handed over: the chain that is current once
  /// the one in `incoming` (if any) is taken, and the one that will then have been replaced.
  private struct Handover {
    var latest: UInt
    var beforeLatest: UInt
    /// The chain the last call's swap replaces, while it has not come back (0: none).
    var awaiting: UInt = 0
  }
  private let control: Locked<Handover>

  public init(_ chain: VoiceChain) {
    let raw = UInt(bitPattern: Unmanaged.passRetained(chain).toOpaque())
    pointer.store(raw, ordering: .releasing)
    control = Locked(Handover(latest: raw, beforeLatest: raw))
  }

  deinit {
    for raw in [
      pointer.exchange(0, ordering: .acquiringAndReleasing),
      // A waiting chain's pointer carries the curve in its low bit (`crossfade`).
      incoming.exchange(0, ordering: .acquiringAndReleasing) & ~1,
      retired.exchange(0, ordering: .acquiringAndReleasing),
    ] {
      if let p = UnsafeRawPointer(bitPattern: raw) { Unmanaged<VoiceChain>.fromOpaque(p).release() }
    }
  }

  /// Takes the chain waiting to be faded in and makes it current; returns the previous one,
  /// which the audio thread keeps running while it fades out, then hands back (`finishSwap`).
  /// Nil when none is waiting, or while the previous swap's old chain has not been collected.
  /// Only while no fade runs (the caller's own state).
  /// - Realtime: safe
  @inline(__always)
  func beginSwap() -> (old: Unmanaged<VoiceChain>, curve: FadeCurve)? {
    guard incoming.load(ordering: .relaxed) != 0, retired.load(ordering: .acquiring) == 0 else { return nil }
    let tagged = incoming.exchange(0, ordering: .acquiringAndReleasing)
    guard tagged != 0 else { return nil }  // taken back by the control side just now
    let old = pointer.exchange(tagged & ~1, ordering: .acquiringAndReleasing)
    return (Self.chain(old), tagged & 1 == 1 ? .linear : .equalPower)
  }

  /// Hands a faded-out chain back to the control side for release (`retired` is empty: a swap
  /// begins only then, and one runs at a time).
  /// - Realtime: safe
  @inline(__always)
  func finishSwap(_ old: Unmanaged<VoiceChain>) {
    retired.store(UInt(bitPattern: old.toOpaque()), ordering: .releasing)
  }

  /// Crossfades from the running chain to `chain` (prepared and warmed) on the audio thread,
  /// then releases the old chain here, off the audio thread. Blocks until the fade is done (or
  /// `timeoutMilliseconds`; the swap then completes later, and a later call releases what it
  /// leaves). When audio is not running, swaps at once. Returns true when `chain` runs and the
  /// chain it replaced was released. Thread: control.
  @discardableResult
  public func crossfade(
    to chain: VoiceChain, running: Bool, timeoutMilliseconds: Int = 3000, curve: FadeCurve = .equalPower
  ) -> Bool {
    control.withLock { handover in
      Self.release(retired.exchange(0, ordering: .acquiringAndReleasing))
      // A chain an earlier call left waiting never ran: take it back.
      let untaken = incoming.exchange(0, ordering: .acquiringAndReleasing) & ~1
      if untaken != 0 {
        Self.release(untaken)
        handover.latest = handover.beforeLatest
      }
      let raw = UInt(bitPattern: Unmanaged.passRetained(chain).toOpaque())
      guard running else {
        Self.release(pointer.exchange(raw, ordering: .acquiringAndReleasing))
        handover = Handover(latest: raw, beforeLatest: raw)
        return true
      }
      let replaced = handover.latest
      handover = Handover(latest: raw, beforeLatest: replaced, awaiting: replaced)
      incoming.store(curve == .linear ? raw | 1 : raw, ordering: .releasing)
      var waited = 0
      while true {
        let back = retired.exchange(0, ordering: .acquiringAndReleasing)
        if back != 0 {
          Self.release(back)
          if back == replaced {
            handover.awaiting = 0
            return true
          }
          continue  // an earlier swap's old chain: its fade had not finished when that call gave up
        }
        guard waited < timeoutMilliseconds else { return false }
        usleep(1000)
        waited += 1
      }
    }
  }

  /// Releases a chain a swap faded out, if one came back, so the audio thread can begin the
  /// next swap; returns true while the last swap is under way (its chain not yet taken, or the
  /// chain it replaces not yet back). For callers that do not wait in `crossfade`.
  /// Thread: control.
  @discardableResult
  public func collect() -> Bool {
    control.withLock { handover in
      let back = retired.exchange(0, ordering: .acquiringAndReleasing)
      Self.release(back)
      if back != 0 && back == handover.awaiting { handover.awaiting = 0 }
      return handover.awaiting != 0
    }
  }

  /// Releases a retained chain given as raw bits (0: none). Thread: control.
  private static func release(_ raw: UInt) {
    if let p = UnsafeRawPointer(bitPattern: raw) { Unmanaged<VoiceChain>.fromOpaque(p).release() }
  }

  /// The chain to run this cycle, unretained (the slot keeps it alive until it is retired).
  /// - Realtime: safe
  @inline(__always)
  public func current() -> Unmanaged<VoiceChain> {
    Self.chain(pointer.load(ordering: .acquiring))
  }

  /// The chain `raw` (the current one: never 0, stored in `init` and exchanged only for
  /// another chain) points to, unretained.
  /// - Realtime: safe
  @inline(__always)
  private static func chain(_ raw: UInt) -> Unmanaged<VoiceChain> {
    Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: raw).unsafelyUnwrapped)
  }
}

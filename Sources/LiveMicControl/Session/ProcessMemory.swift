import CMalloc
import Foundation
import LiveMicPresets

/// LiveMic's own memory, as `status` reports it (`memory`): what a rig left running for weeks
/// is watched by, and what the restart soak holds flat.
///
/// Supervisor thread only: `mallinfo2` walks the allocator's arenas under their locks.
enum ProcessMemory {
  /// Bytes the allocator has handed out and not had back (glibc's `uordblks` + `hblkhd`): exact,
  /// unlike the resident size, which moves in pages and arena steps and never shrinks back.
  static var heapInUseBytes: Int {
    let info = mallinfo2()
    return Int(info.uordblks) + Int(info.hblkhd)
  }

  /// The process's resident set (`VmRSS` of /proc/self/status), in kilobytes; 0 when unreadable.
  static var residentKilobytes: Int {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
      let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
    else { return 0 }
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
  }

  /// The `memory` object of `status`.
  static var status: JSONValue {
    .object(["heap_in_use_bytes": .int(heapInUseBytes), "resident_kilobytes": .int(residentKilobytes)])
  }
}

import CLilv
import DSP
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The host's URID map: URI strings to small integers and back, shared by every plugin.
///
/// Thread: any non-real-time thread (behind a mutex); plugins map URIs while instantiating,
/// never while running (measured: x42 dpl maps 36 URIs during instantiation, none per cycle).
public final class URIDMap: @unchecked Sendable {
  private final class Table {
    var ids: [String: UInt32] = [:]
    var uris: [UnsafeMutablePointer<CChar>] = []
  }
  private let table = Locked(Table())
  /// The `urid:map` and `urid:unmap` feature data, valid while this object lives.
  let mapFeature: UnsafeMutablePointer<LV2_URID_Map>
  let unmapFeature: UnsafeMutablePointer<LV2_URID_Unmap>

  public init() {
    mapFeature = .allocate(capacity: 1)
    unmapFeature = .allocate(capacity: 1)
    let handle = Unmanaged.passUnretained(self).toOpaque()
    mapFeature.initialize(
      to: LV2_URID_Map(
        handle: handle,
        map: { handle, uri in
          guard let handle, let uri else { return 0 }
          return Unmanaged<URIDMap>.fromOpaque(handle).takeUnretainedValue().map(String(cString: uri))
        }))
    unmapFeature.initialize(
      to: LV2_URID_Unmap(
        handle: handle,
        unmap: { handle, id in
          guard let handle else { return nil }
          return Unmanaged<URIDMap>.fromOpaque(handle).takeUnretainedValue().unmap(id)
        }))
  }

  deinit {
    table.withLock { t in for p in t.uris { free(p) } }
    mapFeature.deallocate()
    unmapFeature.deallocate()
  }

  /// The URID of `uri` (1, 2, … in order of first use; 0 is never used).
  public func map(_ uri: String) -> UInt32 {
    table.withLock { t in
      if let id = t.ids[uri] { return id }
      t.uris.append(strdup(uri))
      let id = UInt32(t.uris.count)
      t.ids[uri] = id
      return id
    }
  }

  /// The URI of `id`, as a C string owned by the map.
  public func unmap(_ id: UInt32) -> UnsafePointer<CChar>? {
    table.withLock { t in
      id >= 1 && Int(id) <= t.uris.count ? UnsafePointer(t.uris[Int(id) - 1]) : nil
    }
  }
}

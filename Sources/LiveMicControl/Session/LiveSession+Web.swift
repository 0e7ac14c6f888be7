import DSP
import Foundation
import LiveMicEngine

#if canImport(Glibc)
  import Glibc
#endif

/// The web remote's start (`--web`): the token made or read, the door opened beside the socket,
/// its address printed once. Thread: the supervisor, before its loop.
extension LiveSession {
  func openWebDoor(_ binding: WebBinding, control: ControlServer) {
    let token: String
    do {
      let (stored, created) = try WebToken.ensure()
      if created { Log.info("web remote: a new token is stored at '\(WebToken.path)' (0600)") }
      token = stored
    } catch { return Log.error(error.description + "; running without the web remote") }
    do {
      let door = try WebDoor(binding: binding, token: token, control: control)
      doors.web = door
      let marker = WebToken.doorFile(socket: control.path)
      if (try? "\(door.binding.host) \(door.binding.port)\n".write(
        toFile: marker, atomically: true, encoding: .utf8))
        != nil
      {
        door.markerPath = marker
      }
      Log.info(
        "web remote on http://\(door.binding.urlHost):\(door.binding.port)/"
          + (door.binding.isLoopback
            ? " (this machine only)" : " (reachable from the network; the token guards it)"))
      Log.info("web remote: open \(door.url)")
      if isatty(2) == 1, let code = WebQRCode.terminalText(door.url) {
        FileHandle.standardError.write(Data(code.utf8))
      }
    } catch {
      Log.error(error.description + "; running without it")
    }
  }
}

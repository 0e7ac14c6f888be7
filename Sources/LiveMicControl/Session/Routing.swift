import Dispatch

/// Where LiveMic's ports go: the connections kept across server restarts, the output and
/// input routes, the presets that follow the output device, and when a graph change has
/// settled and is to be followed. Thread: the supervisor.
final class Routing {
  /// The connections LiveMic's ports have, kept across server restarts.
  let book = ConnectionBook()
  var output: RouteController?
  var input: RouteController?
  /// The presets that follow the output device (`--autoload`), if any.
  var autoload: AutoloadRules?
  /// When a graph change has settled and is to be followed (nil: none pending).
  var graphSettled: DispatchTime?

  init() {}
}

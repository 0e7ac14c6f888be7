/// The installed LV2 plugins the tests use, by URI (Debian packages lv2-examples, x42-plugins,
/// mda-lv2, which scripts/setup installs).
public enum Installed {
  public static let amp = "http://lv2plug.in/plugins/eg-amp"
  public static let dpl = "http://gareus.org/oss/lv2/dpl#stereo"
  public static let delay = "http://drobilla.net/plugins/mda/Delay"
  public static let detune = "http://drobilla.net/plugins/mda/Detune"
  public static let fil4 = "http://gareus.org/oss/lv2/fil4#stereo"
  public static let convo = "http://gareus.org/oss/lv2/convoLV2#Mono"
  public static let zeroconvolv = "http://gareus.org/oss/lv2/zeroconvolv#Mono"
  public static let monoToStereo = "http://gareus.org/oss/lv2/zeroconvolv#CfgMonoToStereo"
  public static let noAudio = "http://gareus.org/oss/lv2/controlfilter#invert"
}

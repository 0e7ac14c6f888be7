public enum LiveMicEngineVersion { public static let string = "0.1.0" }

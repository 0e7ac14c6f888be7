/// One stage as a preset or the command line describes it.
///
/// Thread: any (value type).
public struct StageDescription: Sendable, Equatable {
  /// The stage id, unique in the chain; the first part of its parameter keys.
  public var id: String
  /// The unit type (`eq`) for a built-in unit.
  public var type: String
  /// Initial values by parameter name (without the id); missing ones take their defaults.
  public var values: [String: Float]
  /// Whether the stage starts bypassed.
  public var bypassed: Bool

  public init(id: String, type: String, values: [String: Float] = [:], bypassed: Bool = false) {
    self.id = id
    self.type = type
    self.values = values
    self.bypassed = bypassed
  }
}

/// Why a chain could not be built. Each message is one sentence.
public enum ChainError: CodedError, Equatable {
  case unknownUnit(id: String, type: String)
  case unknownParameter(id: String, name: String, known: [String])
  case duplicateId(String)
  case invalidId(String)

  public var description: String {
    switch self {
    case .unknownUnit(let id, let type):
      return "stage '\(id)' has unknown unit type '\(type)' (known: "
        + (BuiltinUnits.types + BuiltinUnits.optionalTypes).map { $0.typeName }.joined(separator: ", ") + ")"
    case .unknownParameter(let id, let name, let known):
      return "stage '\(id)' has no parameter '\(name)' (it has: \(known.joined(separator: ", ")))"
    case .duplicateId(let id):
      return "stage id '\(id)' is used twice; give each stage its own id"
    case .invalidId(let id):
      return "stage id '\(id)' must be letters, digits, '_' or '-' and start with a letter"
    }
  }

  public var code: String {
    switch self {
    case .unknownUnit: return "chain.unknown-unit"
    case .unknownParameter: return "chain.unknown-parameter"
    case .duplicateId: return "chain.duplicate-id"
    case .invalidId: return "chain.invalid-id"
    }
  }
}

/// The built-in unit types, in the default chain order.
public enum BuiltinUnits {
  nonisolated(unsafe) public static let types: [any VoiceUnit.Type] = [
    InputGain.self, EchoCanceller.self, HighPass.self, Denoise.self, NoiseGate.self, Equalizer.self,
    DeEsser.self, Leveler.self, Compressor.self, Echo.self, Reverb.self, FeedbackSuppressor.self,
    Limiter.self,
    OutputVolume.self,
  ]
  /// Units a preset may name that are not in the default chain: `music` and `monitor` (added
  /// by `--music` and `--monitor`), `loudness` (added by `--loudness-target`), and the WebRTC
  /// engines of `denoise`, `aec` and `leveler`.
  nonisolated(unsafe) public static let optionalTypes: [any VoiceUnit.Type] = [
    MusicBed.self, MonitorMix.self, LoudnessTarget.self, WebRTCDenoise.self, WebRTCEchoCanceller.self,
    WebRTCLeveler.self,
  ]
  public static var typeNames: [String] { types.map { $0.typeName } }

  public static func type(named name: String) -> (any VoiceUnit.Type)? {
    types.first { $0.typeName == name } ?? optionalTypes.first { $0.typeName == name }
  }

  /// The default chain: every built-in unit once, in order, ids equal to type names.
  public static var defaultChain: [StageDescription] {
    types.map { StageDescription(id: $0.typeName, type: $0.typeName) }
  }

  /// The name of the parameter every stage has for bypass.
  public static let bypassParameter = ParameterSpec.toggle(
    "bypass", default: false, "Bypasses the stage (crossfaded over 10 ms).")
}

/// Collects stages and their parameters, then makes a `VoiceChain`. Not real-time.
public struct ChainAssembly {
  private var stages: [Stage] = []
  private var parameters: [VoiceChain.Parameter] = []
  private var values: [Float] = []
  private var ids: Set<String> = []

  public init() {}

  /// The index the next stage's first parameter will have.
  public var nextParameterIndex: Int { values.count }

  /// Appends a built-in unit described by `description`.
  public mutating func append(_ description: StageDescription) throws(ChainError) {
    guard let type = BuiltinUnits.type(named: description.type) else {
      throw .unknownUnit(id: description.id, type: description.type)
    }
    try append(unit: type, description)
  }

  private mutating func append<U: VoiceUnit>(unit: U.Type, _ d: StageDescription)
    throws(ChainError)
  {
    let specs = U.parameters + [BuiltinUnits.bypassParameter]
    var initial = specs.map { $0.defaultValue }
    initial[specs.count - 1] = d.bypassed ? 1 : 0
    for (name, value) in d.values {
      guard let i = specs.firstIndex(where: { $0.name == name }) else {
        throw .unknownParameter(id: d.id, name: name, known: specs.map { $0.name })
      }
      initial[i] = specs[i].sanitize(value)
    }
    let first = nextParameterIndex
    let stage = UnitStage<U>(
      id: d.id, firstParameter: first, initial: initial, maxFrames: VoiceChain.subBlockFrames)
    try append(stage: stage, parameters: zip(specs, initial).map { ($0, $1) })
  }

  /// Appends any stage (a plugin, from the host layer) with its parameters in index order,
  /// starting at `nextParameterIndex`.
  public mutating func append(stage: Stage, parameters specs: [(ParameterSpec, Float)])
    throws(ChainError)
  {
    let id = stage.id
    guard let first = id.unicodeScalars.first, first.properties.isAlphabetic,
      id.unicodeScalars.allSatisfy({
        $0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-"
      })
    else { throw .invalidId(id) }
    guard ids.insert(id).inserted else { throw .duplicateId(id) }
    for (spec, value) in specs {
      parameters.append(.init(key: "\(id).\(spec.name)", index: values.count, spec: spec))
      values.append(value)
    }
    stages.append(stage)
  }

  /// Makes the chain and prepares it (warmed with a block of silence) for `sampleRate`.
  public func makeChain(
    sampleRate: Double, warmFrames: Int = VoiceChain.subBlockFrames * 4, context: ProcessingContext = .offline
  ) -> VoiceChain {
    let chain = VoiceChain(stages: stages, parameters: parameters, initialValues: values)
    chain.prepare(sampleRate: sampleRate, warmFrames: warmFrames, context: context)
    return chain
  }

  /// Checks that `descriptions` would build (units, ids and parameters exist) without
  /// preparing anything.
  public static func validate(_ descriptions: [StageDescription]) throws(ChainError) {
    var assembly = ChainAssembly()
    for d in descriptions { try assembly.append(d) }
  }

  /// Builds and prepares a chain of built-in units.
  public static func build(
    _ descriptions: [StageDescription], sampleRate: Double, context: ProcessingContext = .offline
  ) throws(ChainError) -> VoiceChain {
    var assembly = ChainAssembly()
    for d in descriptions { try assembly.append(d) }
    return assembly.makeChain(sampleRate: sampleRate, context: context)
  }
}

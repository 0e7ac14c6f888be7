/// Paul Kellet's filter that turns white noise pink (-3 dB an octave), a sample at a time.
public struct PinkFilter {
  private var b = [Double](repeating: 0, count: 7)

  public init() {}

  /// The pink sample for the next white sample `x`.
  public mutating func callAsFunction(_ x: Double) -> Double {
    b[0] = 0.99886 * b[0] + x * 0.0555179
    b[1] = 0.99332 * b[1] + x * 0.0750759
    b[2] = 0.96900 * b[2] + x * 0.1538520
    b[3] = 0.86650 * b[3] + x * 0.3104856
    b[4] = 0.55000 * b[4] + x * 0.5329522
    b[5] = -0.7616 * b[5] - x * 0.0168980
    let y = b[0] + b[1] + b[2] + b[3] + b[4] + b[5] + b[6] + x * 0.5362
    b[6] = x * 0.115926
    return y
  }
}

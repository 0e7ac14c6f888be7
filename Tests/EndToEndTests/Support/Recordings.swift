import CSndfile
import Foundation

/// A sound file read whole with libsndfile: its frame count (as its header says) and its
/// channels, de-interleaved. Nil when libsndfile cannot open it.
struct SoundFile {
  let frames: Int
  let sampleRate: Int
  let channels: [[Float]]

  init?(_ path: String) {
    var info = SF_INFO()
    guard let file = sf_open(path, Int32(SFM_READ), &info) else { return nil }
    defer { sf_close(file) }
    let count = Int(info.frames)
    let c = Int(info.channels)
    var interleaved = [Float](repeating: 0, count: max(count * c, 1))
    let got = Int(sf_readf_float(file, &interleaved, sf_count_t(count)))
    frames = got
    sampleRate = Int(info.samplerate)
    channels = (0..<c).map { ch in (0..<got).map { interleaved[$0 * c + ch] } }
  }
}

/// What libsndfile makes of a recording, read in chunks (a header's length is not trusted for
/// the allocation): whether it opens, the frames its header claims, the frames it yields.
struct FileCheck {
  let opens: Bool
  let headerFrames: Int
  let readFrames: Int
  /// libsndfile's reason when it does not open.
  let error: String
  /// The first channel, when asked for.
  let left: [Float]

  init(_ path: String, keepLeft: Bool = false) {
    var info = SF_INFO()
    guard let file = sf_open(path, Int32(SFM_READ), &info) else {
      (opens, headerFrames, readFrames, error, left) = (false, 0, 0, String(cString: sf_strerror(nil)), [])
      return
    }
    defer { sf_close(file) }
    let c = Int(info.channels)
    var chunk = [Float](repeating: 0, count: 4096 * c)
    var total = 0
    var kept: [Float] = []
    while true {
      let n = Int(sf_readf_float(file, &chunk, 4096))
      if n <= 0 { break }
      if keepLeft { for i in 0..<n { kept.append(chunk[i * c]) } }
      total += n
    }
    (opens, headerFrames, readFrames, error, left) = (true, Int(clamping: info.frames), total, "", kept)
  }
}

/// Raw interleaved stereo float32 (a `--stream-format f32` stream), de-interleaved.
func stereoFloats(_ data: Data) -> [[Float]] {
  let count = data.count / 8
  var left = [Float](repeating: 0, count: count)
  var right = [Float](repeating: 0, count: count)
  data.withUnsafeBytes { raw in
    for i in 0..<count {
      left[i] = raw.loadUnaligned(fromByteOffset: i * 8, as: Float.self)
      right[i] = raw.loadUnaligned(fromByteOffset: i * 8 + 4, as: Float.self)
    }
  }
  return [left, right]
}

/// How `samples` lines up with `reference` (a capture): the offset `o` such that
/// `samples[i] == reference[i + o]`, found by searching the reference for a 64-sample probe
/// from the middle of `samples`, bit for bit. Nil when the probe is not there.
func alignment(of samples: [Float], in reference: [Float]) -> Int? {
  let length = 64
  guard samples.count > 2 * length, reference.count > length else { return nil }
  let at = samples.count / 2
  let probe = samples[at..<(at + length)].map(\.bitPattern)
  var j = 0
  while j + length <= reference.count {
    var k = 0
    while k < length && reference[j + k].bitPattern == probe[k] { k += 1 }
    if k == length { return j - at }
    j += 1
  }
  return nil
}

/// Compares `samples` with `reference` from an offset: how many samples differ, how many fall
/// outside the reference, and how often the offset moved. An xrun of the dummy server can run
/// the capture client in a cycle LiveMic skipped: the capture then holds a period the tap never
/// saw, and from there on the recording matches at a later offset. So at a mismatch the next
/// 64 samples are looked for within 4096 frames of the current offset, and found there, the
/// comparison goes on from the new offset (a resync, counted) instead of counting every later
/// sample as different.
func compare(_ samples: [Float], _ reference: [Float], offset start: Int) -> (
  mismatches: Int, outside: Int, resyncs: Int
) {
  var mismatches = 0
  var outside = 0
  var resyncs = 0
  var offset = start
  var noSearchUntil = 0
  func matches(_ i: Int, _ o: Int) -> Bool {
    guard i + 64 <= samples.count, i + o >= 0, i + o + 64 <= reference.count else { return false }
    for k in 0..<64 where samples[i + k].bitPattern != reference[i + o + k].bitPattern { return false }
    return true
  }
  var i = 0
  while i < samples.count {
    let j = i + offset
    guard j >= 0 && j < reference.count else {
      outside += 1
      i += 1
      continue
    }
    if samples[i].bitPattern != reference[j].bitPattern {
      if i >= noSearchUntil {
        if let moved = (-4096...4096).first(where: { $0 != 0 && matches(i, offset + $0) }) {
          offset += moved
          resyncs += 1
          continue
        }
        noSearchUntil = i + 256
      }
      mismatches += 1
    }
    i += 1
  }
  return (mismatches, outside, resyncs)
}

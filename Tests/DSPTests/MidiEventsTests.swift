import DSP
import Testing

@Suite("MIDI events of a cycle")
struct MidiEventsTests {
  @Test(
    "events keep their frames and bytes in order; a full cycle drops and counts the rest; clear empties it")
  func appendFullClear() {
    let events = MidiEvents()
    var note: [UInt8] = [0x90, 60, 100]
    #expect(events.append(frame: 5, data: &note, size: 3) == .stored)
    var sysex = [UInt8](repeating: 0x7F, count: 40)
    sysex[0] = 0xF0
    sysex[39] = 0xF7
    #expect(events.append(frame: 9, data: &sysex, size: sysex.count) == .stored)
    #expect(events.count == 2)
    #expect(events.frame(0) == 5 && Array(events.data(0)) == note)
    #expect(events.frame(1) == 9 && Array(events.data(1)) == sysex)
    events.clear()
    #expect(events.count == 0)
    for i in 0..<MidiEvents.capacity { events.append(frame: UInt32(i), data: &note, size: 3) }
    #expect(events.append(frame: 9999, data: &note, size: 3) == .full)
    #expect(events.count == MidiEvents.capacity && events.dropped == 1)
    events.clear()
    var huge = [UInt8](repeating: 0, count: MidiEvents.byteCapacity + 1)
    #expect(events.append(frame: 0, data: &huge, size: huge.count) == .full)
    #expect(events.count == 0 && events.dropped == 2)
  }
}

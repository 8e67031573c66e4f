import Testing
@testable import BlobCache

@Suite("Segment map")
struct SegmentMapTests {
    @Test("agrees with a Dictionary over random sets, removals and lookups, and keeps its keys ascending")
    func agreesWithDictionary() {
        var generator = SeededGenerator(seed: 0x5e9)
        var map = SegmentMap<Int64>()
        var model: [UInt32: Int64] = [:]
        for step in 0..<20_000 {
            // Few distinct numbers, so that sets replace, removals hit, and the map shrinks to empty.
            let number = UInt32.random(in: 0...200, using: &generator) &* 7
            switch Int.random(in: 0..<4, using: &generator) {
            case 0, 1:
                let value = Int64(step)
                map[number] = value
                model[number] = value
            case 2:
                #expect(map.removeValue(forKey: number) == model.removeValue(forKey: number))
            default:
                map[number] = nil
                model[number] = nil
            }
            #expect(map[number] == model[number])
            #expect(map[number &+ 1] == nil)
        }
        #expect(map.keys == model.keys.sorted())
        #expect(map.values == map.keys.map { model[$0]! })
        #expect(map.count == model.count)
        #expect(map.isEmpty == model.isEmpty)
        for number in map.keys { map[number] = nil }
        #expect(map.isEmpty && map.values.isEmpty)
    }

    @Test("the extremes of UInt32 are keys like any other")
    func extremes() {
        var map = SegmentMap<String>()
        map[.max] = "last"
        map[0] = "first"
        map[1] = "second"
        #expect(map.keys == [0, 1, .max])
        #expect(map[.max] == "last" && map[0] == "first" && map[2] == nil)
        #expect(map.removeValue(forKey: 0) == "first")
        #expect(map.removeValue(forKey: 0) == nil)
        #expect(map.keys == [1, .max])
    }
}

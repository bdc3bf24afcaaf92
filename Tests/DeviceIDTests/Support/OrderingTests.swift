@testable import DeviceID
import XCTest

/// `ordered(by:)` (Support/Ordering.swift), the one sort the library uses, against the standard
/// library's stable `sorted(by:)` on random lists with many equal keys: the same order, equal
/// elements in the order they came.
final class OrderingTests: XCTestCase {
    func testTheSameOrderAsTheStandardLibrarysStableSort() {
        var generator = SystemRandomNumberGenerator()
        for length in [0, 1, 2, 3, 8, 33, 200] {
            for _ in 0..<20 {
                let items = (0..<length).map { index in (key: Int.random(in: 0..<5, using: &generator), index: index) }
                let ours = items.ordered { $0.key < $1.key }.map(\.index)
                XCTAssertEqual(ours, items.sorted { $0.key < $1.key }.map(\.index), "\(items)")
                XCTAssertEqual(items.ordered { $0.key > $1.key }.map(\.index), items.sorted { $0.key > $1.key }.map(\.index))
            }
        }
    }
}

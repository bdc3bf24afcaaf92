/// Ordering for the short lists the library sorts: a host's network interfaces, a CBOR map's keys,
/// the keyring items of one name, a record's fields — each a handful. A stable insertion sort,
/// written once: the standard library's `sorted(by:)` is a merge sort whose specialisations for
/// these four lists cost 15 KB of the library (docs/PERFORMANCE.md, its size row), and for tens of
/// elements insertion is as fast.
extension Sequence {
    /// The elements in the order `precedes` gives; equal ones keep their order.
    func ordered(by precedes: (Element, Element) -> Bool) -> [Element] {
        var result = Array(self)
        var i = 1
        while i < result.count {
            let item = result[i]
            var j = i
            while j > 0 && precedes(item, result[j - 1]) {
                result[j] = result[j - 1]
                j -= 1
            }
            result[j] = item
            i += 1
        }
        return result
    }
}

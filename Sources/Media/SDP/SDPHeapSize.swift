import Loop

/// What a parsed description keeps on the heap, by `HeapSize`'s rules: the line arrays and each
/// value's storage. A call keeps its offer for its whole life, so its memory account counts it.
extension SessionDescription {
    package var heapBytes: Int {
        HeapSize.of(lines) + HeapSize.of(attributes) + HeapSize.of(media)
            + lines.reduce(0) { $0 + $1.heapBytes } + attributes.reduce(0) { $0 + $1.heapBytes } + media.reduce(0) { $0 + $1.heapBytes }
    }
}

extension MediaDescription {
    package var heapBytes: Int {
        HeapSize.of(type) + HeapSize.of(proto) + HeapSize.of(formats) + formats.reduce(0) { $0 + HeapSize.of($1) }
            + HeapSize.of(lines) + HeapSize.of(attributes) + lines.reduce(0) { $0 + $1.heapBytes } + attributes.reduce(0) { $0 + $1.heapBytes }
    }
}

extension SDPLine {
    package var heapBytes: Int { HeapSize.of(value) }
}

extension SDPAttribute {
    package var heapBytes: Int { HeapSize.of(name) + (value.map(HeapSize.of) ?? 0) }
}

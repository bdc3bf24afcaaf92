/// The library version; `include/deviceid.h` carries the same numbers as macros (a test checks).
public enum Version {
    public static let major = 0
    public static let minor = 3
    public static let patch = 0
    public static let string: StaticString = "0.3.0"
}

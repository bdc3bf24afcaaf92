/// The app's constants (a third file).
enum Settings {
    static let appID = "com.example.consumer"
}

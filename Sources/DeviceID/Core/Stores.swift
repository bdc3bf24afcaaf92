/// The stores a configuration puts to work, and how much each one's silence means.
struct Stores: Sendable {
    /// The keyring, unless the file backend was chosen.
    let keyring: SecretServiceStore?
    /// The file store, unless the secret-service backend was chosen.
    let file: FileStore?
    /// True when the keyring was chosen explicitly, so that its absence is an error.
    let keyringRequired: Bool
    /// Where the cross-process lock lives: always the file store's directory.
    let lockDirectory: FileStore

    init(_ configuration: Configuration) throws(DeviceIDError) {
        let directory: String
        if let chosen = configuration.storeDirectory {
            directory = chosen
        } else {
            directory = try StoreDirectory.defaultPath()
        }
        let fileStore = FileStore(path: directory)
        let keyringStore = SecretServiceStore(deadline: configuration.keyringDeadline)
        switch configuration.backend {
        case .auto:
            keyring = keyringStore
            file = fileStore
            keyringRequired = false
        case .secretService:
            keyring = keyringStore
            file = nil
            keyringRequired = true
        case .file:
            keyring = nil
            file = fileStore
            keyringRequired = false
        }
        lockDirectory = fileStore
    }

    /// What one store said when asked for an item.
    enum Answer<Value> {
        case found(Value)
        /// The store positively has none.
        case none
        /// The store is not there (auto mode, no Secret Service): it neither has nor lacks anything.
        case absent(DeviceIDError)
        /// The store is there but could not answer (locked, timed out, corrupt, I/O…).
        case failed(DeviceIDError)

        var value: Value? {
            if case .found(let v) = self { return v }
            return nil
        }

        var failure: DeviceIDError? {
            if case .failed(let e) = self { return e }
            return nil
        }

        var isPresent: Bool {
            if case .absent = self { return false }
            return true
        }
    }

    /// Asks the keyring, classifying "not there" apart from "there but silent". A Secret Service
    /// without a default collection is there: it may hold the ID where nothing can be read now.
    func ask<Value>(keyring body: (SecretServiceStore) throws(DeviceIDError) -> Value?) -> Answer<Value>? {
        guard let keyring else { return nil }
        do {
            if let value = try body(keyring) { return .found(value) }
            return Stores.Answer.none
        } catch where error.code == .unavailable && !keyringRequired {
            return .absent(error)
        } catch {
            return .failed(error)
        }
    }

    func ask<Value>(file body: (FileStore) throws(DeviceIDError) -> Value?) -> Answer<Value>? {
        guard let file else { return nil }
        do {
            if let value = try body(file) { return .found(value) }
            return Stores.Answer.none
        } catch {
            return .failed(error)
        }
    }
}

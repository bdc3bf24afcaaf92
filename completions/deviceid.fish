# fish completion for deviceid(1)
set -l commands get reset secret vendor advertising openudid uuid mac mac-md5 hash machine-id product-uuid hardware-id attest assert tpm-pin doctor version help
complete -c deviceid -f
complete -c deviceid -l backend -x -a 'auto secret-service file' -d 'which stores'
complete -c deviceid -l protection -x -a 'portable this-device-only this-device-only+pcr7' -d 'what IDs and secrets written get'
complete -c deviceid -l timeout -x -d 'deadline of each keyring conversation (ms)'
complete -c deviceid -l store-dir -r -a '(__fish_complete_directories)' -d 'file store directory'
complete -c deviceid -l interactive -d 'let the keyring show dialogs'
complete -c deviceid -l json -d 'machine-readable output and errors'
complete -c deviceid -l interface -x -a '(__fish_print_interfaces)' -d 'network interface'
complete -c deviceid -l bundle -x -d 'bundle id'
complete -c deviceid -l uppercase -d 'uppercase hex'
complete -c deviceid -l compact -d 'no dashes or colons'
complete -c deviceid -l nonce -x -d "the server's nonce (base64)"
complete -c deviceid -l ak-certificate -r -F -d "the CA's AK certificate message"
complete -c deviceid -l client-data-hash -x -d "SHA-256 of the client data (base64url)"
complete -c deviceid -l allow-empty -d 'secret store: an empty secret is meant'
complete -c deviceid -s h -l help -d 'help'
complete -c deviceid -l version -d 'print the version'
complete -c deviceid -n "not __fish_seen_subcommand_from $commands" -a get -d "print this device's stable ID for APP_ID"
complete -c deviceid -n "not __fish_seen_subcommand_from $commands" -a reset -d 'forget the ID; the next get mints a new one'
complete -c deviceid -n "not __fish_seen_subcommand_from $commands" -a secret -d 'store, look up or delete a secret'
complete -c deviceid -n "not __fish_seen_subcommand_from $commands" -a vendor -d 'identifierForVendor'
complete -c deviceid -n "not __fish_seen_subcommand_from $commands" -a advertising -d 'the advertising ID'
complete -c deviceid -n "not __fish_seen_subcommand_from $commands" -a openudid -d 'the ID every app of this user shares'
complete -c deviceid -n "not __fish_seen_subcommand_from $commands" -a uuid -d 'a random UUID v4'
complete -c deviceid -n "not __fish_seen_subcommand_from $commands" -a mac -d 'the primary hardware address'
complete -c deviceid -n "not __fish_seen_subcommand_from $commands" -a mac-md5 -d 'MD5 of the MAC'
complete -c deviceid -n "not __fish_seen_subcommand_from $commands" -a hash -d 'hex digest of stdin'
complete -c deviceid -n "not __fish_seen_subcommand_from $commands" -a machine-id -d 'the app-specific or raw machine ID'
complete -c deviceid -n "not __fish_seen_subcommand_from $commands" -a product-uuid -d 'the raw firmware product UUID'
complete -c deviceid -n "not __fish_seen_subcommand_from $commands" -a hardware-id -d "this TPM's hardware-bound ID for APP_ID"
complete -c deviceid -n "not __fish_seen_subcommand_from $commands" -a attest -d 'TPM attestation: enrol, activate, certify, webauthn'
complete -c deviceid -n "not __fish_seen_subcommand_from $commands" -a assert -d "a WebAuthn assertion for APP_ID's server"
complete -c deviceid -n "not __fish_seen_subcommand_from $commands" -a tpm-pin -d "forget this machine's pin for the TPM"
complete -c deviceid -n "not __fish_seen_subcommand_from $commands" -a doctor -d 'check the bus, the keyring and the file store'
complete -c deviceid -n "not __fish_seen_subcommand_from $commands" -a version -d 'print the version'
complete -c deviceid -n "not __fish_seen_subcommand_from $commands" -a help -d 'print help'
complete -c deviceid -n "__fish_seen_subcommand_from secret" -a 'store lookup delete'
complete -c deviceid -n "__fish_seen_subcommand_from vendor" -a 'get reset'
complete -c deviceid -n "__fish_seen_subcommand_from advertising" -a 'get reset limit on off'
complete -c deviceid -n "__fish_seen_subcommand_from openudid" -a 'get opt-out reset on off'
complete -c deviceid -n "__fish_seen_subcommand_from hash" -a 'md5 sha256'
complete -c deviceid -n "__fish_seen_subcommand_from machine-id" -a 'app-specific raw'
complete -c deviceid -n "__fish_seen_subcommand_from product-uuid" -a raw
complete -c deviceid -n "__fish_seen_subcommand_from attest" -a 'enrol activate certify webauthn'
complete -c deviceid -n "__fish_seen_subcommand_from tpm-pin" -a forget
complete -c deviceid -n "__fish_seen_subcommand_from help" -a "$commands"

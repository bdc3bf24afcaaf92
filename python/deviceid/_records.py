"""What DeviceID answers with: StableID, Environment, MACAddress, and the names it takes (Backend,
Scope, Algorithm) and gives (Source, Location, ...), typed for mypy --strict.

At run time the records are collections.namedtuple classes and the names are str: the `typing`
module costs more to import (4-8 ms) than the whole `import deviceid; deviceid.get()` otherwise
takes in Python, and a type checker reads the typed forms below (TYPE_CHECKING is true for it)."""
from __future__ import annotations

from collections import namedtuple

_STABLE_ID_DOC = """An identifier, where it came from ("keyring", "file", "created" or "portal"), and how far to
trust it.

device_changed: it was stored on another machine (cloned image, restored backup).
weak: not known to be unique to this device. limited: advertising tracking is limited.
file_only: the keyring answered but refused or failed to keep the ID (keyring_error says why);
the ID is good, and the next call tries the keyring again. repaired: a corrupt copy in one store
was replaced with the other store's valid one. mirrored: answered by the file mirror, which the
keyring confirmed within the re-check interval, without D-Bus (source is then "keyring").
provisional: kept in the file store while no keyring could be asked and never confirmed by one;
a keyring that later answers with another ID wins (use the file backend where none ever will).
app_data_only: in a Flatpak or Snap, kept only in the app's own data, which removing it removes.
anchor_changed: in a Flatpak or Snap, the Secret portal gave another secret for the app than the
one the mirrored ID was derived from (the host's keyring item replaced): this ID differs from the
one answered before. Said once, by the call that saw the change.
location: where the ID lives — "keyring", "portal" (derived from the Secret portal's secret for
the sandboxed app), "app-data", "host", "container", "volume", "bind-mount", or "undetermined" (in a
container whose mount table could not be read whole: not promised to outlive it)
(docs/ENVIRONMENTS.md "What survives what").
"""

_ENVIRONMENT_DOC = """Where this process runs and what survives what there (deviceid doctor's "environment").

kind: "host", "flatpak", "snap" or "container"; name: the Flatpak app id, the snap's name, the
container manager ("docker", "podman", "systemd-nspawn", ...), "" on a host. portal: "not-asked",
"secret", "absent" or "failed" (portal_detail says why). machine_id_weak: the machine ID is not
known to be this machine's own (a container's, baked into its image); machine_id_detail says why.
store_path, store_location: the file store and where its files live. stable_id_location: where an
app's stable ID is kept here when none is yet; the survives_* flags are for that location.
protection: "portable", "this-device-only" or "this-device-only+pcr7"; binding: what binds it
here, "none" (portable), "tpm", "tpm+pcr7" (the TPM and PCR 7 as it is now) or "refused"
(this-device-only with no TPM that can seal), in words in binding_detail.
"""

_MAC_ADDRESS_DOC = """A hardware address ("AA:BB:CC:DD:EE:FF"), its interface, and whether it is the
permanent address and whether it is weak (locally administered)."""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal, NamedTuple

    #: Which stores take part: the keyring and the file store, the keyring only, the file store only.
    Backend = Literal["auto", "secret-service", "file"]
    #: What a copied home carries: everything ("portable"), or nothing readable elsewhere
    #: ("this-device-only"; "+pcr7": nor here once the Secure Boot state, PCR 7, changed).
    Protection = Literal["portable", "this-device-only", "this-device-only+pcr7"]
    #: What binds this-device-only here: nothing (portable), this machine's TPM (and PCR 7), or a refusal.
    Binding = Literal["none", "tpm", "tpm+pcr7", "refused"]
    #: Whose identifier: an app's, a vendor's, the advertising ID, the OpenUDID shared by all apps.
    Scope = Literal["app", "vendor", "advertising", "openudid"]
    #: A digest algorithm of hash_hex() and token_hash().
    Algorithm = Literal["md5", "sha256"]
    #: Where an identifier came from.
    Source = Literal["keyring", "file", "created", "portal"]
    #: Where an identifier lives (docs/ENVIRONMENTS.md "What survives what").
    Location = Literal["keyring", "portal", "app-data", "host", "container", "volume", "bind-mount", "undetermined"]
    #: Where this process runs.
    EnvironmentKind = Literal["host", "flatpak", "snap", "container"]
    #: What the Secret portal said.
    PortalState = Literal["not-asked", "secret", "absent", "failed"]

    class StableID(NamedTuple):
        """An identifier, where it came from, and how far to trust it (see the module's help)."""
        id: str
        source: Source
        device_changed: bool = False
        weak: bool = False
        limited: bool = False
        file_only: bool = False
        keyring_error: str | None = None
        repaired: bool = False
        mirrored: bool = False
        provisional: bool = False
        app_data_only: bool = False
        location: Location = "host"
        anchor_changed: bool = False

    class Environment(NamedTuple):
        """Where this process runs and what survives what there."""
        kind: EnvironmentKind
        name: str
        portal: PortalState
        portal_detail: str
        machine_id_weak: bool
        machine_id_detail: str
        store_path: str
        store_location: Location
        stable_id_location: Location
        survives_app_data_removal: bool
        survives_container_removal: bool
        protection: Protection = "portable"
        binding: Binding = "none"
        binding_detail: str = ""

    class MACAddress(NamedTuple):
        """A hardware address, its interface, and whether it is permanent and whether it is weak."""
        address: str
        interface: str
        permanent: bool
        weak: bool

else:
    Backend = Protection = Binding = Scope = Algorithm = Source = Location = EnvironmentKind = PortalState = str
    StableID = namedtuple("StableID", "id source device_changed weak limited file_only keyring_error repaired "
                          "mirrored provisional app_data_only location anchor_changed",
                          defaults=(False, False, False, False, None, False, False, False, False, "host", False))
    Environment = namedtuple("Environment", "kind name portal portal_detail machine_id_weak machine_id_detail "
                             "store_path store_location stable_id_location survives_app_data_removal "
                             "survives_container_removal protection binding binding_detail",
                             defaults=("portable", "none", ""))
    MACAddress = namedtuple("MACAddress", "address interface permanent weak")
    StableID.__doc__, Environment.__doc__, MACAddress.__doc__ = _STABLE_ID_DOC, _ENVIRONMENT_DOC, _MAC_ADDRESS_DOC

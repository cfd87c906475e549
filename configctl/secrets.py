"""Secrets in dynamic config: SCRAM credentials, encrypted broker passwords, and masking.

Three things a ZooKeeper-mode Kafka cluster keeps in ``/config`` must be produced bit-compatibly:

* SCRAM credentials under ``users/<user>`` (``SCRAM-SHA-256=salt=...,stored_key=...``), computed as
  Kafka's ``ScramFormatter`` does (RFC 5802), so brokers authenticate the user;
* sensitive per-broker configs (``ssl.keystore.password`` ...), encrypted as Kafka's
  ``EncryptingPasswordEncoder`` does, so a broker with the same ``password.encoder.secret``
  decrypts them;
* masked or digested values for display and snapshots, so secrets never leak but drift stays visible
  (digests themselves in :mod:`configctl.digests`).

Pure functions; the only randomness is salts and IVs from :mod:`secrets`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets as _random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, CipherAlgorithm, algorithms, modes

# Newer cryptography releases keep the old ciphers and modes apart (the primitives aliases warn when
# used); older ones only have the primitives.
try:
    from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
except ImportError:  # pragma: no cover - older cryptography
    from cryptography.hazmat.primitives.ciphers.algorithms import TripleDES
try:
    from cryptography.hazmat.decrepit.ciphers.modes import CFB, OFB
except ImportError:  # pragma: no cover - older cryptography
    from cryptography.hazmat.primitives.ciphers.modes import CFB, OFB

# Digests (what snapshots show instead of a secret) live in configctl.digests, standard library
# only, so the audit job reads them on a cluster driver without this module's dependencies;
# re-exported here, where the rest of the project looks for them.
from configctl.digests import (  # noqa: F401
    DIGEST_KEY_ENV,
    DIGEST_PREFIX,
    KEYED_PREFIX,
    comparable,
    digest,
    is_digest,
    is_keyed,
    keyed_digest,
    published_digest,
    read_digest_key,
)
from configctl.errors import InvalidInput

if TYPE_CHECKING:
    from configctl.entities import Entity

# -- SCRAM ----------------------------------------------------------------------------------------

SCRAM_MECHANISMS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
DEFAULT_ITERATIONS = 4096

# What kafka-configs.sh accepts after its bracket removal. Java's '.' stops at any line terminator.
_SCRAM_SPEC_RE = re.compile(r"(?:iterations=([0-9]*),)?password=([^\n\r\u0085\u2028\u2029]*)")
_SCRAM_FIELDS = ("salt", "stored_key", "server_key", "iterations")
_SCRAM_SALT_BITS = 130  # ScramFormatter.secureRandomBytes: new BigInteger(130, random) in base 36
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def is_scram_mechanism(name: str) -> bool:
    """True for the config keys that hold SCRAM credentials (``SCRAM-SHA-256``, ``SCRAM-SHA-512``)."""
    return name in SCRAM_MECHANISMS


def shown_iterations(iterations: int) -> str:
    """A SCRAM credential as a KRaft cluster reports it (DescribeUserScramCredentials gives the
    mechanism and the iteration count only): ``iterations=4096``."""
    return f"iterations={int(iterations)}"


def iterations_of(value: str) -> int:
    """The iteration count of a credential, stored (``salt=...,iterations=N``) or as a KRaft
    cluster reports it (``iterations=N``); -1 for one that is neither (it differs from any)."""
    for token in value.split(","):
        key, _, count = token.partition("=")
        if key == "iterations" and count.isdigit():
            return int(count)
    return -1


def _hash_name(mechanism: str) -> str:
    try:
        return SCRAM_MECHANISMS[mechanism]
    except KeyError:
        known = ", ".join(SCRAM_MECHANISMS)
        raise InvalidInput(f"unknown SCRAM mechanism {mechanism!r} (expected one of: {known})") from None


def parse_scram_spec(mechanism: str, spec: str) -> tuple[str, int]:
    """Read what an operator gives for a SCRAM key: ``[iterations=N,]password=SECRET`` -> (password, N).

    The password never appears in an error message: it may be right even when the rest is not.
    """
    _hash_name(mechanism)
    match = _SCRAM_SPEC_RE.fullmatch(spec)
    if not match:
        raise InvalidInput(f"invalid {mechanism} value: expected [iterations=N,]password=SECRET")
    digits, password = match.groups()
    if digits is None:
        iterations = DEFAULT_ITERATIONS
    elif not digits:
        raise InvalidInput(f"invalid {mechanism} value: iterations= needs a number")
    else:
        iterations = int(digits)
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise InvalidInput(
            f"{mechanism} iterations {iterations} is outside the allowed range {MIN_ITERATIONS}..{MAX_ITERATIONS}"
        )
    if not password:
        raise InvalidInput(f"{mechanism} password must not be empty")
    return password, iterations


def scram_in_clear(value: str) -> bool:
    """Whether a SCRAM key's value is an operator's ``[iterations=N,]password=...`` (or a KRaft
    cluster's ``iterations=N`` report), not a stored credential (``salt=...``): the one test."""
    return not value.startswith("salt=")


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """RFC 5802's ``Hi(password, salt, iterations)`` with the mechanism's HMAC: what a broker
    derives a stored credential from (AlterUserScramCredentials carries it, never the password)."""
    hash_name = _hash_name(mechanism)
    return hashlib.pbkdf2_hmac(
        hash_name, _password_bytes(password, f"{mechanism} password"), salt, iterations
    )


def scram_salt() -> bytes:
    """A new salt, as Kafka makes one (:func:`_scram_salt`)."""
    return _scram_salt()


def _scram_salt() -> bytes:
    """Kafka's salt: the UTF-8 text of a random 130-bit number written in base 36."""
    number = _random.randbits(_SCRAM_SALT_BITS)
    digits = ""
    while True:
        number, rest = divmod(number, 36)
        digits = _BASE36[rest] + digits
        if not number:
            return digits.encode("ascii")


def _password_bytes(password: str, what: str) -> bytes:
    try:
        return password.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{what} contains characters that cannot be encoded as UTF-8") from None


def _scram_keys(mechanism: str, password: str, salt: bytes, iterations: int) -> tuple[bytes, bytes]:
    """RFC 5802: (StoredKey, ServerKey) from the password, salt and iteration count."""
    hash_name = _hash_name(mechanism)
    salted = salted_password(mechanism, password, salt, iterations)  # dklen = hash length
    client_key = hmac.digest(salted, b"Client Key", hash_name)
    stored_key = hashlib.new(hash_name, client_key).digest()
    server_key = hmac.digest(salted, b"Server Key", hash_name)
    return stored_key, server_key


@dataclass(frozen=True)
class ScramCredential:
    """A stored SCRAM credential (what the broker needs; the password itself is never stored)."""

    salt: bytes
    stored_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)
    iterations: int

    def to_config_value(self) -> str:
        """Kafka's ``ScramCredentialUtils.credentialToString`` form."""
        b64 = base64.b64encode
        return (
            f"salt={b64(self.salt).decode()},stored_key={b64(self.stored_key).decode()},"
            f"server_key={b64(self.server_key).decode()},iterations={self.iterations}"
        )


def scram_credential(
    mechanism: str, password: str, iterations: int = DEFAULT_ITERATIONS, *, salt: bytes | None = None
) -> str:
    """The value Kafka stores for a SCRAM mechanism key: ``salt=..,stored_key=..,server_key=..,iterations=N``.

    ``salt`` is for tests and reproducible fixtures; leave it out in real use.
    """
    _hash_name(mechanism)  # an unknown mechanism is refused before anything else
    if isinstance(iterations, bool) or not isinstance(iterations, int):
        raise InvalidInput(f"{mechanism} iterations must be an integer")
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise InvalidInput(
            f"{mechanism} iterations {iterations} is outside the allowed range {MIN_ITERATIONS}..{MAX_ITERATIONS}"
        )
    if not password:
        raise InvalidInput(f"{mechanism} password must not be empty")
    salt = _scram_salt() if salt is None else bytes(salt)
    stored_key, server_key = _scram_keys(mechanism, password, salt, iterations)
    return ScramCredential(salt, stored_key, server_key, iterations).to_config_value()


def scram_config_value(mechanism: str, spec: str) -> str:
    """What ``--add-config 'SCRAM-SHA-256=[iterations=8192,password=...]'`` stores (Kafka's ``scramCredential``)."""
    password, iterations = parse_scram_spec(mechanism, spec)
    return scram_credential(mechanism, password, iterations)


def _b64decode(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput(f"{what} is not valid Base64") from None


def parse_scram_credential(value: str) -> ScramCredential:
    """Read a stored credential strictly: exactly ``salt``, ``stored_key``, ``server_key``, ``iterations``."""
    fields: dict[str, str] = {}
    for token in value.split(","):
        key, sep, val = token.partition("=")
        if not sep:
            raise InvalidInput(f"SCRAM credential: {key!r} is not key=value")
        if key not in _SCRAM_FIELDS:
            raise InvalidInput(f"SCRAM credential: unexpected field {key!r}")
        if key in fields:
            raise InvalidInput(f"SCRAM credential: field {key!r} appears twice")
        fields[key] = val
    missing = [name for name in _SCRAM_FIELDS if name not in fields]
    if missing:
        raise InvalidInput(f"SCRAM credential: missing {', '.join(missing)}")
    if not re.fullmatch(r"[0-9]{1,9}", fields["iterations"]) or int(fields["iterations"]) < 1:
        raise InvalidInput(f"SCRAM credential: iterations {fields['iterations']!r} is not a positive integer")
    return ScramCredential(
        salt=_b64decode(fields["salt"], "SCRAM credential salt"),
        stored_key=_b64decode(fields["stored_key"], "SCRAM credential stored_key"),
        server_key=_b64decode(fields["server_key"], "SCRAM credential server_key"),
        iterations=int(fields["iterations"]),
    )


def verify_scram_password(mechanism: str, credential: str, password: str) -> bool:
    """Would a broker holding ``credential`` accept ``password``? (Constant-time comparison.)"""
    parsed = parse_scram_credential(credential)
    stored_key, server_key = _scram_keys(mechanism, password, parsed.salt, parsed.iterations)
    # Evaluate both comparisons: no early exit that would reveal which key differed.
    same_stored = hmac.compare_digest(stored_key, parsed.stored_key)
    same_server = hmac.compare_digest(server_key, parsed.server_key)
    return same_stored and same_server


# -- password.encoder: encrypted broker passwords -------------------------------------------------

# Java's SecretKeyFactory names for PBKDF2 -> hashlib names. Kafka defaults to SHA512 and falls back
# to SHA1 when SHA512 is unavailable, so values written with either must decrypt.
_KEY_FACTORIES = {
    "PBKDF2WithHmacSHA1": "sha1",
    "PBKDF2WithHmacSHA224": "sha224",
    "PBKDF2WithHmacSHA256": "sha256",
    "PBKDF2WithHmacSHA384": "sha384",
    "PBKDF2WithHmacSHA512": "sha512",
}
CBC = "AES/CBC/PKCS5Padding"
GCM = "AES/GCM/NoPadding"
_AES_KEY_LENGTHS = (128, 192, 256)


@dataclass(frozen=True)
class _CipherSpec:
    """What a ``password.encoder.cipher.algorithm`` name means to javax.crypto, in cryptography terms.

    Key lengths and IV sizes are what Java accepts and generates for the name (probed on OpenJDK 17
    through Kafka's own encoder): DES takes only 64-bit keys, DESede only 192-bit (three-key) ones,
    AES 128, 192 or 256; the IV is one cipher block, except for GCM's 12 bytes.
    """

    family: str  # the name's part before '/', which Kafka hands to SecretKeySpec
    key_lengths: tuple[int, ...]
    block_bits: int
    mode: Callable[[bytes], modes.Mode]
    iv_bytes: int

    def algorithm(self, key: bytes) -> CipherAlgorithm:
        if self.family == "AES":
            return algorithms.AES(key)
        # DES-EDE with the same key three times is single DES: OpenSSL's DES-EDE3 does the work, and
        # the key is repeated here because the library deprecates 8-byte TripleDES keys.
        return TripleDES(key * 3 if self.family == "DES" else key)


# The ciphers Kafka's PasswordEncoderTest (3.9) exercises; every other name is refused.
_CIPHERS = {
    CBC: _CipherSpec("AES", _AES_KEY_LENGTHS, 128, modes.CBC, 16),
    "AES/CFB/PKCS5Padding": _CipherSpec("AES", _AES_KEY_LENGTHS, 128, CFB, 16),  # Java's CFB is CFB128
    "AES/OFB/PKCS5Padding": _CipherSpec("AES", _AES_KEY_LENGTHS, 128, OFB, 16),
    GCM: _CipherSpec("AES", _AES_KEY_LENGTHS, 128, modes.GCM, 12),
    "DES/CBC/PKCS5Padding": _CipherSpec("DES", (64,), 64, modes.CBC, 8),
    "DESede/CBC/PKCS5Padding": _CipherSpec("DESede", (192,), 64, modes.CBC, 8),
}
_GCM_TAG_LENGTHS = (128, 120, 112, 104, 96, 64, 32)  # what Java's GCMParameterSpec accepts
_SALT_BYTES = 256  # EncryptingPasswordEncoder: new byte[256]
_GCM_TAG_BITS = 128
# Kafka joins the fields of a java.util.HashMap, so they come out in that map's bucket order, which
# depends on the field names only: the same for every cipher, GCM's tag length after the cipher name.
_FIELD_ORDER = (
    "initializationVector",
    "keyLength",
    "salt",
    "keyFactoryAlgorithm",
    "cipherAlgorithm",
    "authenticationTagLength",
    "iterations",
    "passwordLength",
    "encryptedPassword",
)
# Kafka's password.encoder.iterations is at least 1024 and has no upper bound; we refuse absurd counts
# so that a tampered value cannot keep the tool busy for minutes.
_MIN_ENCODER_ITERATIONS = 1024
_MAX_ENCODER_ITERATIONS = 1_000_000


def _java_length(text: str) -> int:
    """``String.length()``: UTF-16 code units (a character outside the BMP counts twice)."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


class _Corrupt(Exception):
    """Internal: the encoded value cannot be decrypted; the detail goes into the one-line error."""


def _lengths(spec: _CipherSpec) -> str:
    """``(128, 192, 256)`` -> ``128, 192 or 256`` for error messages."""
    names = [str(n) for n in spec.key_lengths]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


class PasswordEncoder:
    """Kafka's ``EncryptingPasswordEncoder`` for ``password.encoder.secret``.

    The encoded form is Kafka's comma-separated ``key:value`` map, which carries every parameter
    needed to decrypt (key factory, cipher, key length, salt, iterations, IV), so a value written
    with one setting still decrypts after the defaults change; the constructor's settings only
    govern :meth:`encode`. (Kafka's own decoder is narrower: it reads the IV fields the way its
    configured cipher wants them, so a broker set to GCM cannot read a CBC value or the reverse.
    Reading both costs nothing and lets the tool inspect any cluster.)
    """

    def __init__(
        self,
        secret: str,
        *,
        cipher_algorithm: str = CBC,
        key_length: int = 128,
        iterations: int = 4096,
        key_factory_algorithm: str = "PBKDF2WithHmacSHA512",
    ) -> None:
        if not secret:
            raise InvalidInput("password.encoder.secret must not be empty")
        self._secret = _password_bytes(secret, "password.encoder.secret")
        spec = _CIPHERS.get(cipher_algorithm)
        if spec is None:
            raise InvalidInput(
                f"unsupported password.encoder.cipher.algorithm {cipher_algorithm!r} "
                f"(expected one of: {', '.join(_CIPHERS)})"
            )
        if isinstance(key_length, bool) or key_length not in spec.key_lengths:
            raise InvalidInput(
                f"password.encoder.key.length {key_length!r} must be {_lengths(spec)} for {cipher_algorithm}"
            )
        if (
            isinstance(iterations, bool)
            or not isinstance(iterations, int)
            or not _MIN_ENCODER_ITERATIONS <= iterations <= _MAX_ENCODER_ITERATIONS
        ):
            raise InvalidInput(
                f"password.encoder.iterations {iterations!r} must be an integer in "
                f"{_MIN_ENCODER_ITERATIONS}..{_MAX_ENCODER_ITERATIONS}"
            )
        if key_factory_algorithm not in _KEY_FACTORIES:
            known = ", ".join(_KEY_FACTORIES)
            raise InvalidInput(
                f"unsupported password.encoder.keyfactory.algorithm {key_factory_algorithm!r} (expected one of: {known})"
            )
        self.cipher_algorithm = cipher_algorithm
        self.key_length = key_length
        self.iterations = iterations
        self.key_factory_algorithm = key_factory_algorithm

    def __repr__(self) -> str:  # never show the secret
        return (
            f"PasswordEncoder(cipher_algorithm={self.cipher_algorithm!r}, key_length={self.key_length}, "
            f"iterations={self.iterations}, key_factory_algorithm={self.key_factory_algorithm!r})"
        )

    def _key(self, factory: str, salt: bytes, iterations: int, key_length: int) -> bytes:
        return hashlib.pbkdf2_hmac(_KEY_FACTORIES[factory], self._secret, salt, iterations, key_length // 8)

    def encode(self, password: str) -> str:
        """Encrypt ``password`` with a fresh random salt and IV."""
        return self._encode_with(
            password,
            salt=_random.token_bytes(_SALT_BYTES),
            iv=_random.token_bytes(_CIPHERS[self.cipher_algorithm].iv_bytes),
        )

    def _encode_with(self, password: str, *, salt: bytes, iv: bytes) -> str:
        """:meth:`encode` with the random inputs supplied: the hook for known-answer tests."""
        spec = _CIPHERS[self.cipher_algorithm]
        plaintext = _password_bytes(password, "password")
        key = self._key(self.key_factory_algorithm, salt, self.iterations, self.key_length)
        fields = {
            "keyFactoryAlgorithm": self.key_factory_algorithm,
            "cipherAlgorithm": self.cipher_algorithm,
            "keyLength": str(self.key_length),
            "salt": base64.b64encode(salt).decode(),
            "iterations": str(self.iterations),
            "passwordLength": str(_java_length(password)),
            "initializationVector": base64.b64encode(iv).decode(),
        }
        if self.cipher_algorithm == GCM:
            encryptor = Cipher(algorithms.AES(key), modes.GCM(iv)).encryptor()
            # Java's GCM output is the ciphertext with the authentication tag appended.
            encrypted = encryptor.update(plaintext) + encryptor.finalize() + encryptor.tag
            fields["authenticationTagLength"] = str(_GCM_TAG_BITS)
        else:
            padder = padding.PKCS7(spec.block_bits).padder()
            padded = padder.update(plaintext) + padder.finalize()
            encryptor = Cipher(spec.algorithm(key), spec.mode(iv)).encryptor()
            encrypted = encryptor.update(padded) + encryptor.finalize()
        fields["encryptedPassword"] = base64.b64encode(encrypted).decode()
        return ",".join(f"{name}:{fields[name]}" for name in _FIELD_ORDER if name in fields)

    def decode(self, encoded: str, *, name: str | None = None) -> str:
        """Decrypt a value written by :meth:`encode` or by a Kafka broker / ``kafka-configs.sh``.

        ``name`` (the config key) only makes the error message clearer.
        """
        try:
            return self._decode(encoded)
        except _Corrupt as exc:
            what = name or "encoded password"
            raise InvalidInput(
                f"cannot decrypt {what} ({exc}): wrong password.encoder.secret or corrupt value"
            ) from None

    def _decode(self, encoded: str) -> str:
        params = _parse_csv_map(encoded)
        factory = params.get("keyFactoryAlgorithm", "PBKDF2WithHmacSHA512")  # Kafka's default when absent
        if factory not in _KEY_FACTORIES:
            raise _Corrupt(f"unsupported keyFactoryAlgorithm {factory!r}")
        cipher_alg = _required(params, "cipherAlgorithm")
        spec = _CIPHERS.get(cipher_alg)
        if spec is None:
            raise _Corrupt(f"unsupported cipherAlgorithm {cipher_alg!r}")
        key_length = _int_field(params, "keyLength")
        if key_length not in spec.key_lengths:
            raise _Corrupt(f"keyLength {key_length} does not fit {cipher_alg} (expected {_lengths(spec)})")
        iterations = _int_field(params, "iterations")
        if not 1 <= iterations <= _MAX_ENCODER_ITERATIONS:
            raise _Corrupt(f"iterations {iterations} is outside 1..{_MAX_ENCODER_ITERATIONS}")
        password_length = _int_field(params, "passwordLength")
        salt = _b64_field(params, "salt")
        iv = _b64_field(params, "initializationVector")
        encrypted = _b64_field(params, "encryptedPassword")
        if cipher_alg == GCM:
            tag_bits = _int_field(params, "authenticationTagLength")
            if tag_bits not in _GCM_TAG_LENGTHS:
                raise _Corrupt(f"authenticationTagLength {tag_bits} is not a GCM tag length")
            if not 8 <= len(iv) <= 128:  # what the cryptography library accepts for GCM
                raise _Corrupt(f"initializationVector of {len(iv)} bytes is not usable with GCM")
            tag_bytes = tag_bits // 8
            if len(encrypted) < tag_bytes:
                raise _Corrupt("encryptedPassword is shorter than its authentication tag")
        else:
            if len(iv) != spec.iv_bytes:
                raise _Corrupt(
                    f"initializationVector must be {spec.iv_bytes} bytes for {cipher_alg}, not {len(iv)}"
                )
            # Java refuses padded input that is not whole blocks, in the stream-like CFB and OFB too.
            block_bytes = spec.block_bits // 8
            if not encrypted or len(encrypted) % block_bytes:
                raise _Corrupt(f"encryptedPassword is not a whole number of {spec.family} blocks")
        key = self._key(factory, salt, iterations, key_length)
        try:
            if cipher_alg == GCM:
                body, tag = encrypted[:-tag_bytes], encrypted[-tag_bytes:]
                mode = modes.GCM(iv, tag, min_tag_length=tag_bytes)
                decryptor = Cipher(algorithms.AES(key), mode).decryptor()
                plaintext = decryptor.update(body) + decryptor.finalize()
            else:
                decryptor = Cipher(spec.algorithm(key), spec.mode(iv)).decryptor()
                padded = decryptor.update(encrypted) + decryptor.finalize()
                unpadder = padding.PKCS7(spec.block_bits).unpadder()
                plaintext = unpadder.update(padded) + unpadder.finalize()
        except InvalidTag:
            raise _Corrupt("authentication tag mismatch") from None
        except ValueError:  # the only one left after the checks above: PKCS#5 padding
            raise _Corrupt("padding check failed") from None
        try:
            password = plaintext.decode("utf-8")
        except UnicodeDecodeError:
            raise _Corrupt("decrypted bytes are not UTF-8") from None
        if _java_length(password) != password_length:  # Kafka's sanity check
            raise _Corrupt("password length check failed")
        return password


def _parse_csv_map(encoded: str) -> dict[str, str]:
    """Kafka's ``Csv.parseCsvMap``: split on commas (spaces around them dropped), key before the last ':'."""
    if not isinstance(encoded, str) or not encoded.strip():
        raise _Corrupt("empty value")
    params: dict[str, str] = {}
    for item in re.split(r"\s*,\s*", encoded.strip()):
        key, sep, value = item.rpartition(":")
        if not sep:
            raise _Corrupt(f"field {item[:40]!r} is not key:value")
        key = key.strip()
        if key in params:
            raise _Corrupt(f"field {key!r} appears twice")
        params[key] = value.strip()
    return params


def _required(params: Mapping[str, str], key: str) -> str:
    try:
        return params[key]
    except KeyError:
        raise _Corrupt(f"missing field {key}") from None


def _int_field(params: Mapping[str, str], key: str) -> int:
    value = _required(params, key)
    if not re.fullmatch(r"-?[0-9]{1,9}", value):
        raise _Corrupt(f"field {key} is not an integer")
    return int(value)


def _b64_field(params: Mapping[str, str], key: str) -> bytes:
    value = _required(params, key)
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise _Corrupt(f"field {key} is not valid Base64") from None


# -- masking --------------------------------------------------------------------------------------

MASK = "******"


def is_encoded_password(value: str) -> bool:
    """Whether ``value`` is a password in Kafka's encoded form (:meth:`PasswordEncoder.encode`), as
    stored in ZooKeeper, rather than the password itself."""
    return "encryptedPassword:" in value and "initializationVector:" in value


def mask_config(config: Mapping[str, str], is_sensitive: Callable[[str], bool]) -> dict[str, str]:
    """``config`` with every sensitive value replaced by :data:`MASK` (for display)."""
    return {key: MASK if is_sensitive(key) else value for key, value in config.items()}


def masked(entity: Entity, config: Mapping[str, str]) -> dict[str, str]:
    """``entity``'s config with every sensitive value (the catalogue's rule for its type, and any
    value already masked) replaced by :data:`MASK`: how a config is shown, how configctl's history
    records one where the store hands secrets back in clear (KRaft), and so how a recorded config
    is compared with a stored one."""
    from configctl import catalogue

    return mask_config(
        config, lambda key: catalogue.is_sensitive(entity.schema_type, key) or config[key] == MASK
    )


def digest_config(
    config: Mapping[str, str], is_sensitive: Callable[[str], bool], key: bytes | None = None
) -> dict[str, str]:
    """``config`` with every sensitive value replaced by its :func:`digest` (for snapshots and audits)."""
    return {name: digest(value, key) if is_sensitive(name) else value for name, value in config.items()}

"""SCRAM credentials, password.encoder encryption and masking, checked against Kafka's formats.

The SCRAM known answers were produced by a few lines of Java calling javax.crypto exactly as Kafka's
ScramFormatter does. The password-encoder known answers are the output of Kafka 3.9's own
EncryptingPasswordEncoder (tag 3.9.0-rc3, compiled and run on OpenJDK 17) with its randomness pinned
by a SecureRandom provider that hands out the fixed salt and IVs below.
"""

from __future__ import annotations

import base64
import hashlib
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from configctl.configparse import parse_add_config
from configctl.errors import InvalidInput
from configctl.secrets import (
    DEFAULT_ITERATIONS,
    MASK,
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    SCRAM_MECHANISMS,
    PasswordEncoder,
    ScramCredential,
    digest,
    digest_config,
    is_scram_mechanism,
    mask_config,
    parse_scram_credential,
    parse_scram_spec,
    scram_config_value,
    scram_credential,
    verify_scram_password,
)

pytestmark = pytest.mark.unit

SALT = b"1lv4pdnw4fwq7notcxm0yy1k7q"
SCRAM_256_VECTOR = (
    "salt=MWx2NHBkbnc0ZndxN25vdGN4bTB5eTFrN3E=,stored_key=dbs02zawn1PWf+C6mFgNthm5hP2KyVE3S+TleRjX0Oc=,"
    "server_key=VWSqfiThWB5QzwOTEux/YawaCcQJwmRNQucrXRxM3Yg=,iterations=4096"
)
SCRAM_512_VECTOR = (
    "salt=MWx2NHBkbnc0ZndxN25vdGN4bTB5eTFrN3E=,"
    "stored_key=337Ux4ThZRWRPzkLN1PmPplZDnoOhJ0FDPCgSf6ubEe5aSjYDMBKYgRCEBxplE9Nmh/wTszGAN0nOzC6ZYfeMA==,"
    "server_key=LR7GVL34n4B15FRXwbkh2HMaXJdl6xuLWDW77rd2GMEsyJz51Gc9kbe9PRSNBCNYg5oMWU0P+E7nRKh8EjcvLQ==,"
    "iterations=8192"
)


def test_constants():
    assert SCRAM_MECHANISMS == {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
    assert (MIN_ITERATIONS, MAX_ITERATIONS, DEFAULT_ITERATIONS) == (4096, 16384, 4096)
    assert MASK == "******"
    assert is_scram_mechanism("SCRAM-SHA-512")
    assert not is_scram_mechanism("scram-sha-512")


# -- SCRAM: the operator's form -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("password=alice-secret", ("alice-secret", 4096)),
        ("iterations=8192,password=alice-secret", ("alice-secret", 8192)),
        ("iterations=4096,password=x", ("x", 4096)),
        ("iterations=16384,password=x", ("x", 16384)),
        ("iterations=008192,password=x", ("x", 8192)),
        # after the password= everything is password, commas and '=' included
        ("password=a,b=c", ("a,b=c", 4096)),
        ("password=password=", ("password=", 4096)),
        ("password= spaced ", (" spaced ", 4096)),
        ("password=p\u00e4ss\U0001f511", ("p\u00e4ss\U0001f511", 4096)),
    ],
)
def test_parse_scram_spec(spec, expected):
    assert parse_scram_spec("SCRAM-SHA-256", spec) == expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("iterations=4095,password=hunter2", "4095 is outside the allowed range 4096..16384"),
        ("iterations=16385,password=hunter2", "16385 is outside"),
        ("iterations=0,password=hunter2", "0 is outside"),
        ("iterations=99999999999999999999,password=hunter2", "outside"),
        ("iterations=,password=hunter2", "iterations= needs a number"),
        ("iterations=-1,password=hunter2", "expected \\[iterations=N,\\]password=SECRET"),
        ("iterations=abc,password=hunter2", "expected"),
        ("password=", "password must not be empty"),
        ("hunter2", "expected"),
        ("pass=hunter2", "expected"),
        ("password=hunter2,iterations=8192x", None),  # valid: the password is everything after password=
        ("password=hunter2\nmore", "expected"),
        ("iterations=8192", "expected"),
        (" password=hunter2", "expected"),
    ],
)
def test_parse_scram_spec_errors_never_echo_the_password(spec, message):
    if message is None:
        assert parse_scram_spec("SCRAM-SHA-512", spec)[0] == "hunter2,iterations=8192x"
        return
    with pytest.raises(InvalidInput, match=message) as info:
        parse_scram_spec("SCRAM-SHA-512", spec)
    assert "hunter2" not in str(info.value)
    assert "SCRAM-SHA-512" in str(info.value)


def test_parse_scram_spec_unknown_mechanism():
    with pytest.raises(InvalidInput, match="unknown SCRAM mechanism 'SCRAM-SHA-1'"):
        parse_scram_spec("SCRAM-SHA-1", "password=x")


def test_scram_spec_from_the_command_line():
    added = parse_add_config(
        "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=a,b]"
    )
    assert parse_scram_spec("SCRAM-SHA-256", added["SCRAM-SHA-256"]) == ("alice-secret", 8192)
    assert parse_scram_spec("SCRAM-SHA-512", added["SCRAM-SHA-512"]) == ("a,b", 4096)


# -- SCRAM: credentials ---------------------------------------------------------------------------


def test_scram_sha256_known_answer():
    assert scram_credential("SCRAM-SHA-256", "alice-secret", 4096, salt=SALT) == SCRAM_256_VECTOR


def test_scram_sha512_known_answer():
    assert scram_credential("SCRAM-SHA-512", "alice-secret", 8192, salt=SALT) == SCRAM_512_VECTOR


def test_scram_default_iterations():
    assert scram_credential("SCRAM-SHA-256", "alice-secret", salt=SALT) == SCRAM_256_VECTOR


def test_scram_credential_matches_rfc5802_by_hand():
    # An independent derivation of RFC 5802's keys with hashlib/hmac primitives only.
    import hmac

    salted = hashlib.pbkdf2_hmac("sha512", b"pw", b"salt", 4096)
    stored = hashlib.sha512(hmac.new(salted, b"Client Key", "sha512").digest()).digest()
    server = hmac.new(salted, b"Server Key", "sha512").digest()
    expected = (
        f"salt={base64.b64encode(b'salt').decode()},stored_key={base64.b64encode(stored).decode()},"
        f"server_key={base64.b64encode(server).decode()},iterations=4096"
    )
    assert scram_credential("SCRAM-SHA-512", "pw", salt=b"salt") == expected


@pytest.mark.parametrize("mechanism", sorted(SCRAM_MECHANISMS))
def test_scram_random_salt_is_kafkas_base36_text(mechanism):
    first = parse_scram_credential(scram_credential(mechanism, "secret"))
    second = parse_scram_credential(scram_credential(mechanism, "secret"))
    assert first.salt != second.salt
    for cred in (first, second):
        assert re.fullmatch(rb"[0-9a-z]{1,26}", cred.salt)  # a 130-bit number in base 36
        assert int(cred.salt, 36) < 2**130
        assert cred.iterations == 4096
        assert (
            len(cred.stored_key)
            == len(cred.server_key)
            == hashlib.new(SCRAM_MECHANISMS[mechanism]).digest_size
        )


def test_scram_salts_use_the_whole_130_bits():
    longest = max(len(parse_scram_credential(scram_credential("SCRAM-SHA-256", "x")).salt) for _ in range(20))
    assert longest >= 25  # 36**25 < 2**130 <= 36**26: 20 draws are all shorter with probability ~1e-23


@pytest.mark.parametrize("iterations", [4095, 16385, 0, -1])
def test_scram_credential_iteration_bounds(iterations):
    with pytest.raises(InvalidInput, match="outside the allowed range"):
        scram_credential("SCRAM-SHA-256", "x", iterations)


@pytest.mark.parametrize("iterations", [4096, 16384])
def test_scram_credential_iteration_bounds_inclusive(iterations):
    assert parse_scram_credential(scram_credential("SCRAM-SHA-256", "x", iterations)).iterations == iterations


def test_scram_credential_rejects_bad_input():
    with pytest.raises(InvalidInput, match="unknown SCRAM mechanism"):
        scram_credential("PLAIN", "x")
    with pytest.raises(InvalidInput, match="must not be empty"):
        scram_credential("SCRAM-SHA-256", "")
    with pytest.raises(InvalidInput, match="integer"):
        scram_credential("SCRAM-SHA-256", "x", "4096")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="UTF-8"):
        scram_credential("SCRAM-SHA-256", "\udcff")


def test_scram_config_value():
    value = scram_config_value("SCRAM-SHA-512", "iterations=8192,password=alice-secret")
    assert parse_scram_credential(value).iterations == 8192
    assert verify_scram_password("SCRAM-SHA-512", value, "alice-secret")


def test_parse_scram_credential_known_vector():
    cred = parse_scram_credential(SCRAM_256_VECTOR)
    assert cred == ScramCredential(
        salt=SALT,
        stored_key=base64.b64decode("dbs02zawn1PWf+C6mFgNthm5hP2KyVE3S+TleRjX0Oc="),
        server_key=base64.b64decode("VWSqfiThWB5QzwOTEux/YawaCcQJwmRNQucrXRxM3Yg="),
        iterations=4096,
    )
    assert cred.to_config_value() == SCRAM_256_VECTOR
    assert "stored_key" not in repr(cred) and "server_key" not in repr(cred)


def test_parse_scram_credential_any_field_order():
    fields = SCRAM_256_VECTOR.split(",")
    assert parse_scram_credential(",".join(reversed(fields))) == parse_scram_credential(SCRAM_256_VECTOR)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "is not key=value"),
        ("salt=MQ==,stored_key=MQ==,server_key=MQ==", "missing iterations"),
        ("salt=MQ==,stored_key=MQ==", "missing server_key, iterations"),
        ("salt=MQ==,stored_key=MQ==,server_key=MQ==,iterations=4096,extra=1", "unexpected field 'extra'"),
        ("salt=MQ==,salt=MQ==,stored_key=MQ==,server_key=MQ==,iterations=4096", "appears twice"),
        ("salt=MQ==,stored_key=MQ==,server_key=MQ==,iterations=many", "not a positive integer"),
        ("salt=MQ==,stored_key=MQ==,server_key=MQ==,iterations=0", "not a positive integer"),
        ("salt=MQ==,stored_key=MQ==,server_key=MQ==,iterations=-5", "not a positive integer"),
        ("salt=M!==,stored_key=MQ==,server_key=MQ==,iterations=4096", "salt is not valid Base64"),
        ("salt=MQ==,stored_key=MQ=,server_key=MQ==,iterations=4096", "stored_key is not valid Base64"),
        ("salt=MQ==,stored_key=MQ==,server_key,iterations=4096", "'server_key' is not key=value"),
        ("SALT=MQ==,stored_key=MQ==,server_key=MQ==,iterations=4096", "unexpected field 'SALT'"),
    ],
)
def test_parse_scram_credential_is_strict(value, message):
    with pytest.raises(InvalidInput, match=message):
        parse_scram_credential(value)


def test_verify_scram_password_known_vector():
    assert verify_scram_password("SCRAM-SHA-256", SCRAM_256_VECTOR, "alice-secret")
    assert not verify_scram_password("SCRAM-SHA-256", SCRAM_256_VECTOR, "alice-secreT")
    assert not verify_scram_password("SCRAM-SHA-256", SCRAM_256_VECTOR, "")
    assert verify_scram_password("SCRAM-SHA-512", SCRAM_512_VECTOR, "alice-secret")
    # a SHA-256 credential is not a SHA-512 one
    assert not verify_scram_password("SCRAM-SHA-512", SCRAM_256_VECTOR, "alice-secret")


def test_verify_scram_password_checks_both_keys():
    cred = parse_scram_credential(SCRAM_256_VECTOR)
    wrong_server = ScramCredential(cred.salt, cred.stored_key, bytes(len(cred.server_key)), cred.iterations)
    assert not verify_scram_password("SCRAM-SHA-256", wrong_server.to_config_value(), "alice-secret")


_passwords = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=24)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(sorted(SCRAM_MECHANISMS)), _passwords, _passwords)
def test_scram_round_trip(mechanism, password, other):
    value = scram_credential(mechanism, password)
    assert parse_scram_credential(value).to_config_value() == value
    assert verify_scram_password(mechanism, value, password)
    assert verify_scram_password(mechanism, value, other) == (other == password)


# -- password.encoder -----------------------------------------------------------------------------

SECRET = "kafka-encoder-secret"
PASSWORD = "broker-p\u00e4ssw\u00f6rd-\U0001f511"  # 18 UTF-16 code units, as Java counts
FIXED_SALT = bytes(range(256))
FIXED_SALT_B64 = base64.b64encode(FIXED_SALT).decode()
IV16 = bytes(0xA0 + i for i in range(16))
IV12 = bytes(0xB0 + i for i in range(12))

# Kafka joins a java.util.HashMap, so this field order is Kafka's (and the same for every cipher).
CBC_KAT = (
    f"initializationVector:oKGio6SlpqeoqaqrrK2urw==,keyLength:128,salt:{FIXED_SALT_B64},"
    f"keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:AES/CBC/PKCS5Padding,iterations:4096,"
    f"passwordLength:18,encryptedPassword:wxB6xphf1JneqvIkRwj2OqsN7dklozzNzmzMOniNhi8="
)
GCM_KAT = (
    f"initializationVector:sLGys7S1tre4ubq7,keyLength:256,salt:{FIXED_SALT_B64},"
    f"keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:AES/GCM/NoPadding,authenticationTagLength:128,"
    f"iterations:4096,passwordLength:18,encryptedPassword:ChIL4dbSiqwGx5v9rbgniPQmSbZn5mmY+NzEtyr2Q8gTOKgYeXY="
)
SHA1_KAT = (
    f"initializationVector:oKGio6SlpqeoqaqrrK2urw==,keyLength:128,salt:{FIXED_SALT_B64},"
    f"keyFactoryAlgorithm:PBKDF2WithHmacSHA1,cipherAlgorithm:AES/CBC/PKCS5Padding,iterations:1024,"
    f"passwordLength:18,encryptedPassword:ch2E4YyI/zoGxdLDcXXcIsWYpWHVymBH4O9QB86nZmA="
)
# One per cipher Kafka's PasswordEncoderTest adds beyond AES/CBC and AES/GCM, with the settings it uses.
IV8 = bytes(0xC0 + i for i in range(8))
DES_KAT = (  # testEncoderConfigChange's encoder: PBKDF2WithHmacSHA1, DES/CBC/PKCS5Padding, 64, 1024
    f"initializationVector:wMHCw8TFxsc=,keyLength:64,salt:{FIXED_SALT_B64},"
    f"keyFactoryAlgorithm:PBKDF2WithHmacSHA1,cipherAlgorithm:DES/CBC/PKCS5Padding,iterations:1024,"
    f"passwordLength:18,encryptedPassword:ldCnzPdoMOwBsUoecJiOnOU1fKBbTz2T"
)
DESEDE_KAT = (
    f"initializationVector:wMHCw8TFxsc=,keyLength:192,salt:{FIXED_SALT_B64},"
    f"keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:DESede/CBC/PKCS5Padding,iterations:4096,"
    f"passwordLength:18,encryptedPassword:iIYlBkVFj7jOXNT5zBcpSO4VOaKYZcY+"
)
CFB_KAT = (
    f"initializationVector:oKGio6SlpqeoqaqrrK2urw==,keyLength:128,salt:{FIXED_SALT_B64},"
    f"keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:AES/CFB/PKCS5Padding,iterations:4096,"
    f"passwordLength:18,encryptedPassword:lfPguGkljxBJ8yrqJ56dkWXQFUPsvIvtkGg8LLYSWKI="
)
OFB_KAT = (
    f"initializationVector:oKGio6SlpqeoqaqrrK2urw==,keyLength:128,salt:{FIXED_SALT_B64},"
    f"keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:AES/OFB/PKCS5Padding,iterations:4096,"
    f"passwordLength:18,encryptedPassword:lfPguGkljxBJ8yrqJ56dkbUm5kVAS5WCM99mIByT1hI="
)
SHA256_KAT = (
    f"initializationVector:oKGio6SlpqeoqaqrrK2urw==,keyLength:128,salt:{FIXED_SALT_B64},"
    f"keyFactoryAlgorithm:PBKDF2WithHmacSHA256,cipherAlgorithm:AES/CBC/PKCS5Padding,iterations:4096,"
    f"passwordLength:18,encryptedPassword:2j/CAUuR88vzT9TdvHQ7ygpvqCP61U04WFeZXjOtxH0="
)
# The other AES key lengths with the new modes (Kafka's test uses 128 only; Java accepts all three).
CFB256_KAT = (
    f"initializationVector:oKGio6SlpqeoqaqrrK2urw==,keyLength:256,salt:{FIXED_SALT_B64},"
    f"keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:AES/CFB/PKCS5Padding,iterations:2048,"
    f"passwordLength:18,encryptedPassword:SGimHbAb9IRFthEBm8vueTGpMil1vGIGAwSoHsxr5uE="
)
OFB192_KAT = (
    f"initializationVector:oKGio6SlpqeoqaqrrK2urw==,keyLength:192,salt:{FIXED_SALT_B64},"
    f"keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:AES/OFB/PKCS5Padding,iterations:4096,"
    f"passwordLength:18,encryptedPassword:zH1SyaxZZ5lIGSf4mWJF1pWxT4R24BzE4liX8RqLib8="
)
KATS = [
    (CBC_KAT, {}, IV16),
    (GCM_KAT, {"cipher_algorithm": "AES/GCM/NoPadding", "key_length": 256}, IV12),
    (SHA1_KAT, {"key_factory_algorithm": "PBKDF2WithHmacSHA1", "iterations": 1024}, IV16),
    (
        DES_KAT,
        {
            "key_factory_algorithm": "PBKDF2WithHmacSHA1",
            "cipher_algorithm": "DES/CBC/PKCS5Padding",
            "key_length": 64,
            "iterations": 1024,
        },
        IV8,
    ),
    (DESEDE_KAT, {"cipher_algorithm": "DESede/CBC/PKCS5Padding", "key_length": 192}, IV8),
    (CFB_KAT, {"cipher_algorithm": "AES/CFB/PKCS5Padding"}, IV16),
    (OFB_KAT, {"cipher_algorithm": "AES/OFB/PKCS5Padding"}, IV16),
    (SHA256_KAT, {"key_factory_algorithm": "PBKDF2WithHmacSHA256"}, IV16),
    (CFB256_KAT, {"cipher_algorithm": "AES/CFB/PKCS5Padding", "key_length": 256, "iterations": 2048}, IV16),
    (OFB192_KAT, {"cipher_algorithm": "AES/OFB/PKCS5Padding", "key_length": 192}, IV16),
]
# Every cipher and key length the encoder takes: what javax.crypto accepts for each name.
CIPHER_KEY_LENGTHS = [
    ("AES/CBC/PKCS5Padding", 128),
    ("AES/CBC/PKCS5Padding", 192),
    ("AES/CBC/PKCS5Padding", 256),
    ("AES/CFB/PKCS5Padding", 128),
    ("AES/CFB/PKCS5Padding", 192),
    ("AES/CFB/PKCS5Padding", 256),
    ("AES/OFB/PKCS5Padding", 128),
    ("AES/OFB/PKCS5Padding", 192),
    ("AES/OFB/PKCS5Padding", 256),
    ("AES/GCM/NoPadding", 128),
    ("AES/GCM/NoPadding", 192),
    ("AES/GCM/NoPadding", 256),
    ("DES/CBC/PKCS5Padding", 64),
    ("DESede/CBC/PKCS5Padding", 192),
]


def _fields(encoded: str) -> dict[str, str]:
    return dict(item.split(":", 1) for item in encoded.split(","))


def _join(fields: dict[str, str]) -> str:
    return ",".join(f"{k}:{v}" for k, v in fields.items())


@pytest.mark.parametrize(("expected", "options", "iv"), KATS)
def test_password_encoder_known_answer_encode(expected, options, iv):
    encoder = PasswordEncoder(SECRET, **options)
    assert encoder._encode_with(PASSWORD, salt=FIXED_SALT, iv=iv) == expected


@pytest.mark.parametrize(("encoded", "options", "iv"), KATS)
def test_password_encoder_known_answer_decode(encoded, options, iv):
    # Kafka writes the fields in HashMap order; the order must not matter. The decoder's own
    # settings do not matter either: everything needed is in the value.
    fields = list(_fields(encoded).items())
    random.Random(7).shuffle(fields)
    assert PasswordEncoder(SECRET).decode(_join(dict(fields))) == PASSWORD
    assert PasswordEncoder(SECRET, cipher_algorithm="AES/GCM/NoPadding").decode(encoded) == PASSWORD


def test_password_encoder_accepts_spaces_around_commas():
    # Kafka's Csv.parseCsvMap splits on \s*,\s*
    assert PasswordEncoder(SECRET).decode(CBC_KAT.replace(",", " , ")) == PASSWORD


def test_password_encoder_missing_key_factory_defaults_to_sha512():
    fields = _fields(CBC_KAT)
    del fields["keyFactoryAlgorithm"]
    assert PasswordEncoder(SECRET).decode(_join(fields)) == PASSWORD


def test_password_encoder_decodes_a_value_built_by_hand():
    # The algorithm written out with the primitives, independently of the encoder.
    from cryptography.hazmat.primitives import padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    salt, iv, password = b"\x01" * 256, b"\x02" * 16, "s3cret"
    key = hashlib.pbkdf2_hmac("sha512", b"the-secret", salt, 2048, 256 // 8)
    padder = padding.PKCS7(128).padder()
    enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    ciphertext = enc.update(padder.update(password.encode()) + padder.finalize()) + enc.finalize()
    encoded = (
        f"passwordLength:6,initializationVector:{base64.b64encode(iv).decode()},iterations:2048,"
        f"encryptedPassword:{base64.b64encode(ciphertext).decode()},keyLength:256,"
        f"cipherAlgorithm:AES/CBC/PKCS5Padding,salt:{base64.b64encode(salt).decode()},"
        f"keyFactoryAlgorithm:PBKDF2WithHmacSHA512"
    )
    assert PasswordEncoder("the-secret").decode(encoded) == password


@pytest.mark.filterwarnings("error")  # the old ciphers must not reach deprecated library paths
@pytest.mark.parametrize(
    ("cipher", "key_length", "iv_len", "extra"),
    [
        ("AES/CBC/PKCS5Padding", 128, 16, set()),
        ("AES/CBC/PKCS5Padding", 256, 16, set()),
        ("AES/CFB/PKCS5Padding", 192, 16, set()),
        ("AES/OFB/PKCS5Padding", 256, 16, set()),
        ("AES/GCM/NoPadding", 128, 12, {"authenticationTagLength"}),
        ("AES/GCM/NoPadding", 192, 12, {"authenticationTagLength"}),
        # Java's IV for DES and DESede in CBC mode is one 8-byte block.
        ("DES/CBC/PKCS5Padding", 64, 8, set()),
        ("DESede/CBC/PKCS5Padding", 192, 8, set()),
    ],
)
def test_password_encoder_output_shape(cipher, key_length, iv_len, extra):
    encoder = PasswordEncoder(SECRET, cipher_algorithm=cipher, key_length=key_length)
    first, second = encoder.encode("pw"), encoder.encode("pw")
    assert first != second  # fresh salt and IV every time
    fields = _fields(first)
    assert (
        set(fields)
        == {
            "keyFactoryAlgorithm",
            "cipherAlgorithm",
            "keyLength",
            "salt",
            "iterations",
            "encryptedPassword",
            "passwordLength",
            "initializationVector",
        }
        | extra
    )
    assert fields["keyFactoryAlgorithm"] == "PBKDF2WithHmacSHA512"
    assert fields["cipherAlgorithm"] == cipher
    assert fields["keyLength"] == str(key_length)
    assert fields["iterations"] == "4096"
    assert fields["passwordLength"] == "2"
    assert len(base64.b64decode(fields["salt"])) == 256
    assert len(base64.b64decode(fields["initializationVector"])) == iv_len
    if extra:
        assert fields["authenticationTagLength"] == "128"
    assert encoder.decode(first) == encoder.decode(second) == "pw"


@pytest.mark.filterwarnings("error")
@settings(max_examples=40, deadline=None)
@given(st.sampled_from(CIPHER_KEY_LENGTHS), st.text(max_size=40))
def test_password_encoder_round_trip(cipher_key_length, password):
    cipher, key_length = cipher_key_length
    encoder = PasswordEncoder(SECRET, cipher_algorithm=cipher, key_length=key_length, iterations=1024)
    assert encoder.decode(encoder.encode(password)) == password


def test_password_encoder_round_trip_empty_and_long():
    encoder = PasswordEncoder(SECRET)
    for password in ("", "x" * 1000, "\U0001f511" * 17):
        assert encoder.decode(encoder.encode(password)) == password


@pytest.mark.parametrize(("encoded", "options", "iv"), KATS)
def test_password_encoder_wrong_secret(encoded, options, iv):
    with pytest.raises(InvalidInput) as info:
        PasswordEncoder("not-the-secret").decode(encoded)
    message = str(info.value)
    assert message.startswith("cannot decrypt encoded password")
    assert message.endswith("wrong password.encoder.secret or corrupt value")
    assert "\n" not in message


def test_password_encoder_error_names_the_config():
    with pytest.raises(InvalidInput, match=r"^cannot decrypt ssl\.keystore\.password "):
        PasswordEncoder("nope").decode(CBC_KAT, name="ssl.keystore.password")


def _flip(b64: str, index: int) -> str:
    raw = bytearray(base64.b64decode(b64))
    raw[index] ^= 0x01
    return base64.b64encode(bytes(raw)).decode()


@pytest.mark.parametrize(
    ("kat", "field", "tamper"),
    [
        (CBC_KAT, "encryptedPassword", lambda v: _flip(v, -1)),
        (GCM_KAT, "encryptedPassword", lambda v: _flip(v, 0)),
        (GCM_KAT, "encryptedPassword", lambda v: _flip(v, -1)),  # the tag
        (GCM_KAT, "initializationVector", lambda v: _flip(v, 0)),
        (CBC_KAT, "salt", lambda v: _flip(v, 100)),
        (GCM_KAT, "salt", lambda v: _flip(v, 0)),
        (CBC_KAT, "iterations", lambda v: "4097"),
        (CBC_KAT, "keyLength", lambda v: "256"),
        (CBC_KAT, "keyFactoryAlgorithm", lambda v: "PBKDF2WithHmacSHA256"),
        (CBC_KAT, "passwordLength", lambda v: "17"),
        (GCM_KAT, "passwordLength", lambda v: "19"),
        (GCM_KAT, "authenticationTagLength", lambda v: "96"),
        (GCM_KAT, "cipherAlgorithm", lambda v: "AES/CBC/PKCS5Padding"),
        (CBC_KAT, "cipherAlgorithm", lambda v: "AES/GCM/NoPadding"),
        (CBC_KAT, "cipherAlgorithm", lambda v: "AES/CFB/PKCS5Padding"),
        (CFB_KAT, "cipherAlgorithm", lambda v: "AES/OFB/PKCS5Padding"),
        (CFB_KAT, "encryptedPassword", lambda v: _flip(v, -1)),
        (OFB_KAT, "encryptedPassword", lambda v: _flip(v, -1)),
        (OFB_KAT, "keyLength", lambda v: "192"),
        (DES_KAT, "salt", lambda v: _flip(v, 0)),
        (DES_KAT, "encryptedPassword", lambda v: _flip(v, -1)),
        (DES_KAT, "cipherAlgorithm", lambda v: "DESede/CBC/PKCS5Padding"),
        (DESEDE_KAT, "keyFactoryAlgorithm", lambda v: "PBKDF2WithHmacSHA1"),
        (DESEDE_KAT, "encryptedPassword", lambda v: _flip(v, -1)),
    ],
)
def test_password_encoder_detects_tampering(kat, field, tamper):
    # (Flipping a CBC IV bit is not in this list: CBC has no integrity check, in Kafka either.)
    fields = _fields(kat)
    fields[field] = tamper(fields[field])
    with pytest.raises(InvalidInput, match=r"wrong password\.encoder\.secret or corrupt value"):
        PasswordEncoder(SECRET).decode(_join(fields))


def _without(kat: str, field: str) -> str:
    fields = _fields(kat)
    del fields[field]
    return _join(fields)


def _with(kat: str, field: str, value: str) -> str:
    fields = _fields(kat)
    fields[field] = value
    return _join(fields)


@pytest.mark.parametrize(
    ("encoded", "detail"),
    [
        ("", "empty value"),
        ("   ", "empty value"),
        ("hello", "'hello' is not key:value"),
        (_without(CBC_KAT, "salt"), "missing field salt"),
        (_without(CBC_KAT, "cipherAlgorithm"), "missing field cipherAlgorithm"),
        (_without(CBC_KAT, "initializationVector"), "missing field initializationVector"),
        (_without(CBC_KAT, "passwordLength"), "missing field passwordLength"),
        (_without(GCM_KAT, "authenticationTagLength"), "missing field authenticationTagLength"),
        (_with(CBC_KAT, "cipherAlgorithm", "AES/ECB/PKCS5Padding"), "unsupported cipherAlgorithm"),
        (_with(CBC_KAT, "keyFactoryAlgorithm", "PBKDF2WithHmacMD5"), "unsupported keyFactoryAlgorithm"),
        (_with(CBC_KAT, "keyLength", "100"), "keyLength 100 does not fit AES/CBC/PKCS5Padding"),
        (_with(CBC_KAT, "keyLength", "abc"), "keyLength is not an integer"),
        (_with(CBC_KAT, "iterations", "0"), "iterations 0 is outside"),
        (_with(CBC_KAT, "iterations", "999999999"), "iterations 999999999 is outside"),
        (_with(CBC_KAT, "iterations", "9" * 30), "iterations is not an integer"),
        (_with(CBC_KAT, "salt", "not base64!"), "salt is not valid Base64"),
        (
            _with(CBC_KAT, "encryptedPassword", "QUJD"),
            "encryptedPassword is not a whole number of AES blocks",
        ),
        (_with(CBC_KAT, "encryptedPassword", ""), "not a whole number of AES blocks"),
        (_with(CBC_KAT, "encryptedPassword", "A" * 22 + "=="), "padding check failed"),
        (
            _with(CBC_KAT, "initializationVector", "QUJD"),
            "initializationVector must be 16 bytes for AES/CBC/PKCS5Padding, not 3",
        ),
        (_with(GCM_KAT, "initializationVector", "QUJD"), "initializationVector of 3 bytes is not usable"),
        (_with(GCM_KAT, "encryptedPassword", "QUJD"), "shorter than its authentication tag"),
        (_with(GCM_KAT, "authenticationTagLength", "127"), "not a GCM tag length"),
        (CBC_KAT + ",salt:QUJD", "field 'salt' appears twice"),
        (
            _with(DES_KAT, "keyLength", "128"),
            r"keyLength 128 does not fit DES/CBC/PKCS5Padding \(expected 64\)",
        ),
        # Java refuses two-key (128-bit) DESede keys.
        (_with(DESEDE_KAT, "keyLength", "128"), r"does not fit DESede/CBC/PKCS5Padding \(expected 192\)"),
        (
            _with(CFB_KAT, "keyLength", "64"),
            r"does not fit AES/CFB/PKCS5Padding \(expected 128, 192 or 256\)",
        ),
        (
            _with(DES_KAT, "initializationVector", "oKGio6SlpqeoqaqrrK2urw=="),
            "initializationVector must be 8 bytes for DES/CBC/PKCS5Padding, not 16",
        ),
        (
            _with(OFB_KAT, "initializationVector", "wMHCw8TFxsc="),
            "initializationVector must be 16 bytes for AES/OFB/PKCS5Padding, not 8",
        ),
        # Java wants whole blocks for padded CFB and OFB too, though the modes themselves do not.
        (_with(CFB_KAT, "encryptedPassword", "QUJD"), "not a whole number of AES blocks"),
        (_with(OFB_KAT, "encryptedPassword", "A" * 32), "not a whole number of AES blocks"),
        (_with(DES_KAT, "encryptedPassword", "QUJDREVGRw=="), "not a whole number of DES blocks"),
        (_with(DESEDE_KAT, "encryptedPassword", ""), "not a whole number of DESede blocks"),
    ],
)
def test_password_encoder_malformed_values(encoded, detail):
    with pytest.raises(InvalidInput, match=r"wrong password\.encoder\.secret or corrupt value") as info:
        PasswordEncoder(SECRET).decode(encoded)
    assert re.search(detail, str(info.value)), str(info.value)
    assert "\n" not in str(info.value)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_password_encoder_decode_only_raises_invalid_input(text):
    try:
        PasswordEncoder(SECRET, iterations=1024).decode(text)
    except InvalidInput as exc:
        assert str(exc).startswith("cannot decrypt")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cipher_algorithm": "AES/ECB/PKCS5Padding"}, "unsupported password.encoder.cipher.algorithm"),
        ({"key_length": 100}, "must be 128, 192 or 256 for AES/CBC/PKCS5Padding"),
        ({"cipher_algorithm": "AES/CFB8/NoPadding"}, "unsupported password.encoder.cipher.algorithm"),
        ({"cipher_algorithm": "DES/ECB/PKCS5Padding"}, "unsupported password.encoder.cipher.algorithm"),
        # Each cipher takes only the key lengths javax.crypto accepts (the default 128 is not one for DES).
        ({"cipher_algorithm": "DES/CBC/PKCS5Padding"}, "key.length 128 must be 64 for DES/CBC/PKCS5Padding"),
        (
            {"cipher_algorithm": "DESede/CBC/PKCS5Padding", "key_length": 128},
            "key.length 128 must be 192 for DESede/CBC/PKCS5Padding",
        ),
        (
            {"cipher_algorithm": "AES/OFB/PKCS5Padding", "key_length": 64},
            "key.length 64 must be 128, 192 or 256 for AES/OFB/PKCS5Padding",
        ),
        ({"iterations": 100}, "password.encoder.iterations 100"),
        ({"iterations": 10**9}, "password.encoder.iterations"),
        ({"key_factory_algorithm": "PBKDF2WithHmacMD5"}, "unsupported password.encoder.keyfactory.algorithm"),
    ],
)
def test_password_encoder_rejects_bad_settings(kwargs, message):
    with pytest.raises(InvalidInput, match=message):
        PasswordEncoder(SECRET, **kwargs)


def test_password_encoder_needs_a_secret():
    with pytest.raises(InvalidInput, match=r"password\.encoder\.secret must not be empty"):
        PasswordEncoder("")


def test_password_encoder_repr_hides_the_secret():
    assert SECRET not in repr(PasswordEncoder(SECRET))


# -- password.encoder: Kafka 3.9 PasswordEncoderTest, case by case ---------------------------------
# server-common/src/test/java/org/apache/kafka/security/PasswordEncoderTest.java at tag 3.9.0-rc3.
# Kafka's null key factory means "PBKDF2WithHmacSHA512 when the JVM has it", which ours always is.

KAFKA_TEST_SECRET = "password-encoder-secret"
KAFKA_TEST_PASSWORD = "test-password"


def _verify_encoded_password(encoder: PasswordEncoder, password: str, encoded: str) -> None:
    """Kafka 3.9 PasswordEncoderTest.verifyEncodedPassword: length field, three Base64 fields, round trip."""
    fields = _fields(encoded)
    assert fields["passwordLength"] == str(len(password))
    for name in ("salt", "initializationVector", "encryptedPassword"):
        assert base64.b64decode(fields[name], validate=True), name
    assert encoder.decode(encoded) == password


def test_kafka_encode_decode():
    """Kafka 3.9 PasswordEncoderTest.testEncodeDecode: the defaults are written into the value."""
    encoder = PasswordEncoder(KAFKA_TEST_SECRET)
    encoded = encoder.encode(KAFKA_TEST_PASSWORD)
    fields = _fields(encoded)
    assert fields["iterations"] == "4096"
    assert fields["keyLength"] == "128"
    assert fields["keyFactoryAlgorithm"] == "PBKDF2WithHmacSHA512"
    assert fields["cipherAlgorithm"] == "AES/CBC/PKCS5Padding"
    _verify_encoded_password(encoder, KAFKA_TEST_PASSWORD, encoded)


@pytest.mark.filterwarnings("error")
def test_kafka_encoder_config_change():
    """Kafka 3.9 PasswordEncoderTest.testEncoderConfigChange: DES written, read back under other settings."""
    encoder = PasswordEncoder(
        KAFKA_TEST_SECRET,
        key_factory_algorithm="PBKDF2WithHmacSHA1",
        cipher_algorithm="DES/CBC/PKCS5Padding",
        key_length=64,
        iterations=1024,
    )
    encoded = encoder.encode(KAFKA_TEST_PASSWORD)
    fields = _fields(encoded)
    assert fields["iterations"] == "1024"
    assert fields["keyLength"] == "64"
    assert fields["keyFactoryAlgorithm"] == "PBKDF2WithHmacSHA1"
    assert fields["cipherAlgorithm"] == "DES/CBC/PKCS5Padding"

    # Decoding works even when the cipher, key length and iterations have been changed since.
    decoder = PasswordEncoder(
        KAFKA_TEST_SECRET,
        key_factory_algorithm="PBKDF2WithHmacSHA1",
        cipher_algorithm="AES/CBC/PKCS5Padding",
        key_length=128,
        iterations=2048,
    )
    assert decoder.decode(encoded) == KAFKA_TEST_PASSWORD

    # Decoding fails when the secret has been changed.
    decoder2 = PasswordEncoder(
        "secret-2",
        key_factory_algorithm="PBKDF2WithHmacSHA1",
        cipher_algorithm="AES/CBC/PKCS5Padding",
        key_length=128,
        iterations=1024,
    )
    with pytest.raises(InvalidInput, match=r"wrong password\.encoder\.secret or corrupt value"):
        decoder2.decode(encoded)


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize(
    ("key_factory", "cipher", "key_length"),
    [
        (None, "DES/CBC/PKCS5Padding", 64),
        (None, "DESede/CBC/PKCS5Padding", 192),
        (None, "AES/CBC/PKCS5Padding", 128),
        (None, "AES/CFB/PKCS5Padding", 128),
        (None, "AES/OFB/PKCS5Padding", 128),
        ("PBKDF2WithHmacSHA1", "AES/CBC/PKCS5Padding", 128),
        (None, "AES/GCM/NoPadding", 128),
        ("PBKDF2WithHmacSHA256", "AES/CBC/PKCS5Padding", 128),
        ("PBKDF2WithHmacSHA512", "AES/CBC/PKCS5Padding", 128),
    ],
)
def test_kafka_encode_decode_algorithms(key_factory, cipher, key_length):
    """Kafka 3.9 PasswordEncoderTest.testEncodeDecodeAlgorithms (via verifyEncodeDecode), row by row."""
    options = {} if key_factory is None else {"key_factory_algorithm": key_factory}
    encoder = PasswordEncoder(KAFKA_TEST_SECRET, cipher_algorithm=cipher, key_length=key_length, **options)
    encoded = encoder.encode(KAFKA_TEST_PASSWORD)
    assert _fields(encoded)["keyFactoryAlgorithm"] == (key_factory or "PBKDF2WithHmacSHA512")
    _verify_encoded_password(encoder, KAFKA_TEST_PASSWORD, encoded)


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize(("cipher", "key_length"), CIPHER_KEY_LENGTHS)
def test_kafka_wrong_secret_fails_for_every_cipher(cipher, key_length):
    """Kafka 3.9 PasswordEncoderTest.testEncoderConfigChange: a changed secret fails, here for every cipher."""
    encoded = PasswordEncoder(KAFKA_TEST_SECRET, cipher_algorithm=cipher, key_length=key_length)._encode_with(
        KAFKA_TEST_PASSWORD, salt=FIXED_SALT, iv=_fixed_iv(cipher)
    )
    with pytest.raises(InvalidInput, match=r"wrong password\.encoder\.secret or corrupt value"):
        PasswordEncoder("secret-2").decode(encoded)


def _fixed_iv(cipher: str) -> bytes:
    if cipher.startswith("DES"):
        return IV8
    return IV12 if "GCM" in cipher else IV16


# -- masking --------------------------------------------------------------------------------------


def test_digest():
    assert digest("abc") == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert digest("") == "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert digest("caf\u00e9") == "sha256:" + hashlib.sha256("caf\u00e9".encode()).hexdigest()


def _is_sensitive(key: str) -> bool:
    return key.endswith(".password") or key.startswith("SCRAM-")


def test_mask_config():
    config = {"ssl.keystore.password": "hunter2", "retention.ms": "1000", "SCRAM-SHA-256": "salt=..."}
    masked = mask_config(config, _is_sensitive)
    assert masked == {"ssl.keystore.password": MASK, "retention.ms": "1000", "SCRAM-SHA-256": MASK}
    assert list(masked) == list(config)
    assert config["ssl.keystore.password"] == "hunter2"  # the input is not modified


def test_digest_config():
    config = {"ssl.keystore.password": "hunter2", "retention.ms": "1000"}
    assert digest_config(config, _is_sensitive) == {
        "ssl.keystore.password": digest("hunter2"),
        "retention.ms": "1000",
    }


@given(st.dictionaries(st.text(max_size=10), st.text(max_size=10), max_size=6))
def test_masking_never_leaks(config):
    masked = mask_config(config, lambda k: True)
    digested = digest_config(config, lambda k: True)
    assert set(masked.values()) <= {MASK}
    assert all(v.startswith("sha256:") and len(v) == 7 + 64 for v in digested.values())
    assert mask_config(config, lambda k: False) == digest_config(config, lambda k: False) == config


# -- keyed digests (issue 13: digests a weak secret cannot be guessed from offline) ----------------


def test_without_a_key_the_digest_is_contract_4s_sha256_of_the_value():
    import hashlib as _hashlib

    assert digest("pw") == "sha256:" + _hashlib.sha256(b"pw").hexdigest()


def test_a_fleet_key_makes_digests_unguessable_yet_comparable():
    key = b"0123456789abcdef-fleet"
    assert digest("pw", key) == digest("pw", key)  # equal values still compare equal across the fleet
    assert digest("pw", key) != digest("pw")  # but a guess cannot be checked without the key
    assert digest("pw", key) != digest("pw", b"another-key-0123456")
    assert digest("pw", key).startswith("sha256:") and len(digest("pw", key)) == len("sha256:") + 64


def test_the_digest_key_file_is_read_and_checked(tmp_path, monkeypatch):
    from configctl.secrets import DIGEST_KEY_ENV, read_digest_key

    monkeypatch.delenv(DIGEST_KEY_ENV, raising=False)
    assert read_digest_key() is None
    path = tmp_path / "key"
    path.write_bytes(b"0123456789abcdef-fleet\n")
    monkeypatch.setenv(DIGEST_KEY_ENV, str(path))
    assert read_digest_key() == b"0123456789abcdef-fleet"
    path.write_bytes(b"short")
    with pytest.raises(InvalidInput, match="at least 16 bytes"):
        read_digest_key()

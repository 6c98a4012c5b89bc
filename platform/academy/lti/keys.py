"""The tool's keys: one RSA key pair per registration, made at registration, and its public half as /lti/jwks
publishes it (cryptography and PyLTI1p3 imported by the functions that need them)."""
from __future__ import annotations

from typing import Any


def new_key_pair() -> tuple[str, str]:
    """A fresh RSA key for one registration: (private PEM, its kid as /lti/jwks publishes it)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    return private, public_jwk(private)["kid"]


def public_pem(private_pem: str) -> str:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(private_pem.encode(), password=None)
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def public_jwk(private_pem: str) -> dict[str, Any]:
    """The public half as a JWK, with the kid PyLTI1p3 signs with (its thumbprint), alg RS256, use sig."""
    from pylti1p3.registration import Registration

    return dict(Registration.get_jwk(public_pem(private_pem)))

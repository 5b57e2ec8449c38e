"""A throwaway certificate authority and the serving certificate it signs, as a cluster's
apiserver has them (clients verify the server against the CA written into their kubeconfig, and
tools that detect the cluster read the serving certificate).

Built with ``cryptography`` (the ``tls`` extra, in ``test``): generating keys and X.509
certificates is not something to hand-write. Keys are EC P-256 (fast to generate: a test server
starts in milliseconds) and nothing is written to disk but what the caller asks for.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CertificateAuthority", "ServingCertificate"]

_VALIDITY = datetime.timedelta(days=365)


@dataclass(frozen=True)
class ServingCertificate:
    """A certificate (PEM) and its private key (PEM), signed by ``ca_pem``."""

    cert_pem: bytes
    key_pem: bytes
    ca_pem: bytes

    def server_context(self) -> ssl.SSLContext:
        """An ``ssl.SSLContext`` serving this certificate (TLS 1.2+)."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        with tempfile.TemporaryDirectory() as tmp:
            cert, key = Path(tmp, "tls.crt"), Path(tmp, "tls.key")
            cert.write_bytes(self.cert_pem + self.ca_pem)
            key.write_bytes(self.key_pem)
            key.chmod(0o600)
            context.load_cert_chain(cert, key)
        return context


class CertificateAuthority:
    """A self-signed CA (``CN=<name>``) that signs serving certificates."""

    def __init__(self, name: str = "informer-test-ca") -> None:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        self._key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.UTC)
        self._name = subject
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False
            )
            .sign(self._key, hashes.SHA256())
        )

    @property
    def pem(self) -> bytes:
        """The CA certificate (PEM): what a kubeconfig's ``certificate-authority-data`` holds
        (base64 of it) and a webhook's ``caBundle``."""
        from cryptography.hazmat.primitives.serialization import Encoding

        return self._cert.public_bytes(Encoding.PEM)

    def issue(
        self, hosts: tuple[str, ...] = ("127.0.0.1", "localhost"), name: str = "informer-test"
    ) -> ServingCertificate:
        """A serving certificate for ``hosts`` (IP addresses and DNS names as SANs)."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        names: list[x509.GeneralName] = []
        for host in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(self._name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                critical=False,
            )
            .sign(self._key, hashes.SHA256())
        )
        return ServingCertificate(
            cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            ),
            self.pem,
        )

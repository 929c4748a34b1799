"""The egress guard: which URLs and addresses the host may call back (SPEC_NOTES §12).

Two checks, both pure (no DNS, no sockets):

* :func:`check_url` at registration (``createRun.callbackUrl``, webhooks): the URL must be
  ``https://`` to a public host name or a globally reachable IP literal.
* :func:`check_resolved_addresses` at delivery: every address DNS returned for the host must pass
  the same IP rules; the caller connects to a returned address without resolving again and never
  follows redirects.

What is refused, beyond the spec's list:

* IP literals: everything in the IANA special-purpose registries that is not globally reachable
  (the table ``_BLOCKED_NETWORKS``), everything :mod:`ipaddress` calls non-global, private,
  reserved, multicast or site-local, and any IPv6 outside global unicast ``2000::/3``. IPv4
  embedded in IPv6 (mapped ``::ffff:0:0/96``, compatible ``::/96``, NAT64 ``64:ff9b::/96``, 6to4
  ``2002::/16``) is judged by the embedded IPv4, as the spec asks.
* Cloud metadata endpoints by address (``169.254.169.254``, ``169.254.170.2``, ``fd00:ec2::254``,
  ``100.100.100.200``, ``192.0.0.192``) and by name (``metadata``, ``metadata.goog``,
  ``instance-data`` and anything under ``.internal``, which covers ``metadata.google.internal``
  and ``instance-data.ec2.internal``). Azure's and Oracle's endpoints have no public name.
* Special-use names that never reach the public internet: ``localhost`` and ``*.localhost``,
  ``.local``, ``.internal``, ``.home.arpa``, ``.test``, ``.invalid``, ``.onion``, ``.alt``, and
  single-label names (they resolve through search domains to internal hosts).
* Parser tricks: numeric hosts other than a canonical dotted quad (``2130706433``,
  ``0x7f.0.0.1``, ``0177.0.0.1``, ``127.1``), percent-encoded hosts, IPv6 zone ids, userinfo,
  backslashes, whitespace, control and non-ASCII characters (IDNs must be sent as punycode), and
  URLs over 2048 characters. Refusing rather than normalising keeps this parser from disagreeing
  with the HTTP client's.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Set
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from wop_langgraph.protocol.errors import ValidationError

__all__ = [
    "MAX_URL_LENGTH",
    "AllowList",
    "EgressRefusal",
    "IPAddress",
    "callback_url_pattern",
    "check_resolved_addresses",
    "check_url",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

MAX_URL_LENGTH: Final = 2048


class EgressRefusal(StrEnum):
    """Why a URL or address was refused; sent as ``details.reason``."""

    TOO_LONG = "too_long"
    INVALID_CHARACTER = "invalid_character"
    MALFORMED_URL = "malformed_url"
    NOT_HTTPS = "not_https"
    NO_HOST = "no_host"
    USERINFO = "userinfo"
    BAD_PORT = "bad_port"
    PERCENT_ENCODED_HOST = "percent_encoded_host"
    IPV6_ZONE_ID = "ipv6_zone_id"
    BAD_IPV6 = "bad_ipv6"
    NON_CANONICAL_IPV4 = "non_canonical_ipv4"
    BAD_HOSTNAME = "bad_hostname"
    LOCALHOST = "localhost"
    CLOUD_METADATA = "cloud_metadata"
    SPECIAL_USE_NAME = "special_use_name"
    SINGLE_LABEL_HOST = "single_label_host"
    NO_ADDRESSES = "no_addresses"
    BAD_ADDRESS = "bad_address"
    # IP ranges
    THIS_NETWORK = "this_network"
    UNSPECIFIED = "unspecified"
    LOOPBACK = "loopback"
    PRIVATE = "private"
    SHARED_ADDRESS_SPACE = "shared_address_space"
    LINK_LOCAL = "link_local"
    UNIQUE_LOCAL = "unique_local"
    SITE_LOCAL = "site_local"
    PROTOCOL_ASSIGNMENT = "protocol_assignment"
    DOCUMENTATION = "documentation"
    BENCHMARKING = "benchmarking"
    MULTICAST = "multicast"
    BROADCAST = "broadcast"
    RESERVED = "reserved"
    NOT_GLOBAL = "not_global"


@dataclass(frozen=True, slots=True)
class AllowList:
    """A test-only allowance to call a local receiver on specific loopback ports.

    Production never sets one. A port in ``loopback_ports`` allows ``https://`` to a loopback
    address (``127.0.0.0/8``, ``::1``) or ``localhost`` on that port; a port in
    ``loopback_http_ports`` also allows plain ``http://`` there. Nothing else is relaxed.
    """

    loopback_ports: Set[int] = frozenset()
    loopback_http_ports: Set[int] = frozenset()

    def __post_init__(self) -> None:
        for name in ("loopback_ports", "loopback_http_ports"):
            ports = frozenset(getattr(self, name))
            if any(not isinstance(p, int) or not 0 < p < 65536 for p in ports):
                raise ValueError(f"AllowList.{name}: ports must be integers in 1..65535")
            object.__setattr__(self, name, ports)

    def permits(self, scheme: str, port: int | None) -> bool:
        """Whether a loopback target on ``port`` may be called with ``scheme``."""
        if scheme == "http":
            return port in self.loopback_http_ports
        return port in self.loopback_ports or port in self.loopback_http_ports


_N = ipaddress.ip_network
_R = EgressRefusal
# Checked in order, first match wins: the specific reasons before the ranges that contain them.
_BLOCKED_NETWORKS: Final[tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, EgressRefusal], ...]] = (
    (_N("169.254.169.254/32"), _R.CLOUD_METADATA),  # AWS, GCP, Azure, OCI, DigitalOcean
    (_N("169.254.170.2/32"), _R.CLOUD_METADATA),  # AWS ECS task metadata
    (_N("100.100.100.200/32"), _R.CLOUD_METADATA),  # Alibaba Cloud
    (_N("192.0.0.192/32"), _R.CLOUD_METADATA),  # Oracle Cloud (legacy)
    (_N("fd00:ec2::254/128"), _R.CLOUD_METADATA),  # AWS IMDS over IPv6
    (_N("0.0.0.0/8"), _R.THIS_NETWORK),
    (_N("10.0.0.0/8"), _R.PRIVATE),
    (_N("100.64.0.0/10"), _R.SHARED_ADDRESS_SPACE),  # carrier-grade NAT
    (_N("127.0.0.0/8"), _R.LOOPBACK),
    (_N("169.254.0.0/16"), _R.LINK_LOCAL),
    (_N("172.16.0.0/12"), _R.PRIVATE),
    (_N("192.0.0.0/24"), _R.PROTOCOL_ASSIGNMENT),
    (_N("192.0.2.0/24"), _R.DOCUMENTATION),
    (_N("192.88.99.0/24"), _R.RESERVED),  # deprecated 6to4 relay anycast
    (_N("192.168.0.0/16"), _R.PRIVATE),
    (_N("198.18.0.0/15"), _R.BENCHMARKING),
    (_N("198.51.100.0/24"), _R.DOCUMENTATION),
    (_N("203.0.113.0/24"), _R.DOCUMENTATION),
    (_N("224.0.0.0/4"), _R.MULTICAST),
    (_N("255.255.255.255/32"), _R.BROADCAST),
    (_N("240.0.0.0/4"), _R.RESERVED),
    (_N("::/128"), _R.UNSPECIFIED),
    (_N("::1/128"), _R.LOOPBACK),
    (_N("64:ff9b:1::/48"), _R.PRIVATE),  # local-use NAT64
    (_N("100::/64"), _R.RESERVED),  # discard-only
    (_N("2001:db8::/32"), _R.DOCUMENTATION),
    (_N("2001::/23"), _R.PROTOCOL_ASSIGNMENT),  # Teredo, ORCHID, benchmarking, ...
    (_N("3fff::/20"), _R.DOCUMENTATION),
    (_N("5f00::/16"), _R.RESERVED),  # SRv6 SIDs
    (_N("fc00::/7"), _R.UNIQUE_LOCAL),
    (_N("fe80::/10"), _R.LINK_LOCAL),
    (_N("fec0::/10"), _R.SITE_LOCAL),
    (_N("ff00::/8"), _R.MULTICAST),
)
_GLOBAL_UNICAST_V6: Final = ipaddress.IPv6Network("2000::/3")
_NAT64: Final = ipaddress.IPv6Network("64:ff9b::/96")
_IPV4_COMPATIBLE: Final = ipaddress.IPv6Network("::/96")

_METADATA_NAMES: Final = frozenset({"metadata", "metadata.goog", "instance-data"})
_SPECIAL_USE_SUFFIXES: Final = ("local", "internal", "home.arpa", "test", "invalid", "onion", "alt")

# RFC 3986's characters; anything else (space, controls, "\", "<", non-ASCII) is refused outright.
_URI_CHARACTERS = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*")
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*")
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_DOTTED_QUAD = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}")
_DEFAULT_PORTS: Final = {"https": 443, "http": 80}


def callback_url_pattern() -> str:
    """What :func:`check_url` accepts, as far as one regular expression can say it.

    The pattern reads the same in ECMA-262 (JSON Schema's ``pattern``) and in Python's ``re``
    (whose closing ``$`` must be read as ``\\Z``, as JSON Schema means it). Every URL it matches
    is accepted by :func:`check_url` (no allowance): lower-case ``https://``, a lower-case DNS
    name of at least two labels (each 1..63 letters, digits or inner hyphens, 253 characters in
    all, an optional trailing dot), whose last label is not numeric, that is not localhost, a
    cloud metadata name or a special-use name; an optional port 1..65535; then one ``/``, ``?``
    or ``#`` and RFC 3986's path characters, ``/`` and ``?``. The length limit
    (:data:`MAX_URL_LENGTH`) is a schema's ``maxLength``, not part of the pattern.

    It accepts less than the guard: IP literals, upper case, percent-escapes, ``[]``, a second
    ``#`` and leading zeros in the port are left out (the tail is one character class so that
    schema-driven generators can build a string of a given length without searching). The guard
    refuses more than it can say only at delivery: :func:`check_resolved_addresses` refuses a
    name whose DNS answer holds a non-public address.
    """
    end = "(?:[:/?#]|$)"  # where the host ends
    label = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
    # Only "." needs escaping in these names; re.escape would also escape "-", which ECMA-262's
    # unicode mode refuses outside a character class.
    refused_suffixes = "|".join(s.replace(".", "\\.") for s in ("localhost", *_SPECIAL_USE_SUFFIXES))
    refused_names = "|".join(n.replace(".", "\\.") for n in sorted(_METADATA_NAMES))
    port = "(?::(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}))?"
    pchar = "A-Za-z0-9._~!$&'()*+,;=:@-"
    return (
        "^https://"
        f"(?!(?:[a-z0-9-]+\\.)*(?:{refused_suffixes})\\.?{end})"  # localhost, special-use, *.internal
        f"(?!(?:{refused_names})\\.?{end})"  # cloud metadata names
        # A name of at most 253 characters (a trailing dot aside), said as a negative lookahead,
        # which generators (hypothesis, schemathesis) handle by filtering.
        f"(?![a-z0-9.-]{{255}}|[a-z0-9.-]{{253}}[a-z0-9-]{end})"
        f"(?:{label}\\.)+"
        f"(?![0-9]+\\.?{end})(?!0x[0-9a-f]*\\.?{end})"  # a numeric last label makes it an IPv4 address
        f"{label}\\.?{port}"
        f"(?:[/?#][/?{pchar}]*)?$"
    )


class _Refused(Exception):
    def __init__(self, reason: EgressRefusal, explanation: str) -> None:
        super().__init__(explanation)
        self.reason = reason
        self.explanation = explanation


def check_url(url: str, *, field: str = "callbackUrl", allow: AllowList | None = None) -> None:
    """Accept only an ``https://`` URL whose host may be called from this server.

    The URL itself is never echoed in the error (it may carry credentials).

    Raises:
        ValidationError: with ``details = {"field": field, "reason": <EgressRefusal>}``.
    """
    try:
        scheme, host, port = _split(url, http_allowed=allow is not None)
        target = _parse_host(host)
        if _allowed(allow, target, scheme, port):
            return
        if scheme != "https":
            raise _Refused(_R.NOT_HTTPS, "must be an https:// URL")
        _judge_host(target)
    except _Refused as refused:
        raise _error(field, refused) from None


def check_resolved_addresses(
    host: str,
    addresses: Iterable[str | IPAddress],
    *,
    port: int | None = None,
    allow: AllowList | None = None,
    field: str = "callbackUrl",
) -> tuple[IPAddress, ...]:
    """Re-check, at delivery, a host and every address DNS returned for it.

    ``host`` is the URL's host (brackets optional for IPv6); ``port`` the port to be called, which
    an :class:`AllowList` needs to apply. One bad address refuses the whole host, since the
    client could otherwise be steered to it.

    Returns:
        The addresses, parsed, in the given order: connect to one of these.

    Raises:
        ValidationError: with ``details = {"field": field, "reason": <EgressRefusal>}``; also
            when ``addresses`` is empty or holds something that is not an IP address.
    """
    try:
        inner = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        # Any colon makes it an IPv6 literal, which _parse_host expects in brackets as in a URL.
        target = _parse_host(f"[{inner}]" if ":" in inner else inner)
        checked: list[IPAddress] = []
        for address in addresses:
            try:
                ip = ipaddress.ip_address(address)
            except ValueError:
                raise _Refused(_R.BAD_ADDRESS, "resolved to something that is not an IP address") from None
            checked.append(ip)
        if not checked:
            raise _Refused(_R.NO_ADDRESSES, "resolved to no address")
        for candidate in (target, *checked):
            if not _allowed(allow, candidate, "https", port):
                _judge_host(candidate)
        return tuple(checked)
    except _Refused as refused:
        raise _error(field, refused) from None


def _split(url: str, *, http_allowed: bool) -> tuple[str, str, int]:
    """Split an absolute URL into (lower-case scheme, raw host, effective port)."""
    if len(url) > MAX_URL_LENGTH:
        raise _Refused(_R.TOO_LONG, f"is longer than {MAX_URL_LENGTH} characters")
    if not _URI_CHARACTERS.fullmatch(url):
        raise _Refused(_R.INVALID_CHARACTER, "contains whitespace, control, non-ASCII or non-URL characters")
    if _BAD_PERCENT.search(url):
        raise _Refused(_R.MALFORMED_URL, "has a malformed percent-encoding")
    match = _SCHEME.match(url)
    if match is None:
        raise _Refused(_R.MALFORMED_URL, "is not an absolute URL")
    scheme = match.group(1).lower()
    if scheme != "https" and not (scheme == "http" and http_allowed):
        raise _Refused(_R.NOT_HTTPS, "must be an https:// URL")
    rest = url[match.end() :]
    if not rest.startswith("//"):
        raise _Refused(_R.NO_HOST, "has no host")
    authority = re.split(r"[/?#]", rest[2:], maxsplit=1)[0]
    if "@" in authority:
        raise _Refused(_R.USERINFO, "must not carry credentials (user@host)")
    if authority.startswith("["):
        close = authority.find("]")
        if close < 0 or authority[close + 1 : close + 2] not in ("", ":"):
            raise _Refused(_R.MALFORMED_URL, "has a malformed IPv6 literal")
        host, after = authority[: close + 1], authority[close + 1 :]
    else:
        host, colon, digits = authority.partition(":")
        after = colon + digits
    if not host:
        raise _Refused(_R.NO_HOST, "has no host")
    if not after:
        return scheme, host, _DEFAULT_PORTS[scheme]
    digits = after[1:]
    if not digits.isdigit() or len(digits) > 5 or not 0 < int(digits) < 65536:
        raise _Refused(_R.BAD_PORT, "has a port that is not a number in 1..65535")
    return scheme, host, int(digits)


def _parse_host(host: str) -> IPAddress | str:
    """An IP literal as an address, or a host name normalised (lower case, no trailing dot)."""
    if host.startswith("["):
        inner = host[1:-1] if host.endswith("]") else host[1:]
        if "%" in inner:
            raise _Refused(_R.IPV6_ZONE_ID, "must not carry an IPv6 zone id")
        try:
            return ipaddress.IPv6Address(inner)
        except ValueError:
            raise _Refused(_R.BAD_IPV6, "has an invalid IPv6 literal") from None
    if "%" in host:
        raise _Refused(_R.PERCENT_ENCODED_HOST, "must not percent-encode its host")
    name = host.lower()
    # One trailing dot is a valid fully qualified name ("localhost." is still localhost).
    name = name.removesuffix(".")
    labels = name.split(".")
    # Any host ending in a number is an IPv4 address to URL parsers and inet_aton ("127.1",
    # "2130706433", "0x7f.0.0.1", "0177.0.0.1"); only the canonical form is accepted.
    if _NUMERIC_LABEL.fullmatch(labels[-1]):
        if not _DOTTED_QUAD.fullmatch(name):
            raise _Refused(_R.NON_CANONICAL_IPV4, "has a numeric host that is not a canonical dotted quad")
        return ipaddress.IPv4Address(name)
    if len(name) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise _Refused(_R.BAD_HOSTNAME, "has an invalid host name")
    return name


def _judge_host(target: IPAddress | str) -> None:
    if isinstance(target, str):
        _judge_name(target)
    else:
        _judge_ip(target)


def _judge_name(name: str) -> None:
    if name == "localhost" or name.endswith(".localhost"):
        raise _Refused(_R.LOCALHOST, "must not name localhost")
    if name in _METADATA_NAMES or name.endswith(".internal"):
        raise _Refused(_R.CLOUD_METADATA, "must not name a cloud metadata or internal host")
    if any(name == suffix or name.endswith("." + suffix) for suffix in _SPECIAL_USE_SUFFIXES):
        raise _Refused(_R.SPECIAL_USE_NAME, "must not use a special-use domain that is not public")
    if "." not in name:
        raise _Refused(_R.SINGLE_LABEL_HOST, "must use a fully qualified host name")


def _judge_ip(ip: IPAddress) -> None:
    embedded = _embedded_ipv4(ip)
    if embedded is not None:
        ip = embedded
    if isinstance(ip, ipaddress.IPv6Address) and ip.scope_id is not None:
        raise _Refused(_R.IPV6_ZONE_ID, "must not use a scoped IPv6 address")
    for network, reason in _BLOCKED_NETWORKS:
        if ip in network:
            raise _Refused(reason, f"points at a non-public address: {ip} ({reason.value.replace('_', ' ')})")
    # A second net in case the table misses what the standard library knows, and IPv6 outside
    # global unicast is unallocated or special by definition.
    if (
        not ip.is_global
        or ip.is_private
        or ip.is_reserved
        or ip.is_multicast
        or ip.is_link_local
        or ip.is_loopback
        or (isinstance(ip, ipaddress.IPv6Address) and (ip.is_site_local or ip not in _GLOBAL_UNICAST_V6))
    ):
        raise _Refused(_R.NOT_GLOBAL, f"points at a non-public address: {ip} (not globally reachable)")


def _embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address inside a mapped, compatible, NAT64 or 6to4 IPv6 address."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    # :: and ::1 sit inside ::/96 but are themselves, not IPv4-compatible addresses.
    if ip in _NAT64 or (ip in _IPV4_COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def _allowed(allow: AllowList | None, target: IPAddress | str, scheme: str, port: int | None) -> bool:
    """Whether the test-only allowance covers this loopback target."""
    return allow is not None and _is_loopback(target) and allow.permits(scheme, port)


def _is_loopback(target: IPAddress | str) -> bool:
    if isinstance(target, str):
        return target == "localhost"
    embedded = _embedded_ipv4(target)
    return (embedded or target).is_loopback


def _error(field: str, refused: _Refused) -> ValidationError:
    return ValidationError(
        f"{field} {refused.explanation}",
        details={"field": field, "reason": refused.reason.value},
    )

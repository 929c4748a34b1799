"""The egress guard: hostile callback URLs are refused with a reason, public ones pass."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wop_langgraph.protocol.egress import (
    MAX_URL_LENGTH,
    AllowList,
    EgressRefusal,
    check_resolved_addresses,
    check_url,
)
from wop_langgraph.protocol.errors import ValidationError

HOSTILE = [
    # the spec's conformance probes
    ("https://127.0.0.1/openwop-callback-probe", "loopback"),
    ("https://169.254.169.254/latest/meta-data/", "cloud_metadata"),
    ("https://[::ffff:7f00:1]/openwop-callback-probe", "loopback"),
    # scheme
    ("http://example.com/cb", "not_https"),
    ("ftp://example.com/cb", "not_https"),
    ("javascript:alert(1)", "not_https"),
    ("file:///etc/passwd", "not_https"),
    ("//example.com/cb", "malformed_url"),
    ("example.com/cb", "malformed_url"),
    ("https:example.com", "no_host"),
    ("https:///cb", "no_host"),
    ("https://:443/cb", "no_host"),
    # credentials and authority tricks
    ("https://user:pass@example.com/cb", "userinfo"),
    ("https://example.com@127.0.0.1/", "userinfo"),
    ("https://@example.com/", "userinfo"),
    ("https://example.com\\@127.0.0.1/", "invalid_character"),
    ("https://example.com:0/", "bad_port"),
    ("https://example.com:65536/", "bad_port"),
    ("https://example.com:/", "bad_port"),
    ("https://example.com:44a/", "bad_port"),
    ("https://example.com:443:443/", "bad_port"),
    ("https://[::1]x/", "malformed_url"),
    ("https://[::1/", "malformed_url"),
    # private, loopback, link-local and other special IPv4
    ("https://10.0.0.1/", "private"),
    ("https://172.16.5.4/", "private"),
    ("https://172.31.255.255/", "private"),
    ("https://192.168.1.1/", "private"),
    ("https://127.255.255.254/", "loopback"),
    ("https://169.254.1.1/", "link_local"),
    ("https://169.254.170.2/v2/credentials", "cloud_metadata"),
    ("https://100.100.100.200/latest/meta-data", "cloud_metadata"),
    ("https://0.0.0.0/", "this_network"),
    ("https://100.64.0.1/", "shared_address_space"),
    ("https://192.0.0.8/", "protocol_assignment"),
    ("https://192.0.2.1/", "documentation"),
    ("https://198.51.100.7/", "documentation"),
    ("https://203.0.113.9/", "documentation"),
    ("https://198.18.0.1/", "benchmarking"),
    ("https://224.0.0.1/", "multicast"),
    ("https://239.255.255.250/", "multicast"),
    ("https://240.0.0.1/", "reserved"),
    ("https://255.255.255.255/", "broadcast"),
    # special IPv6
    ("https://[::1]/", "loopback"),
    ("https://[::]/", "unspecified"),
    ("https://[fe80::1]/", "link_local"),
    ("https://[fe80::1%25eth0]/", "ipv6_zone_id"),
    ("https://[fc00::1]/", "unique_local"),
    ("https://[fd12:3456::1]/", "unique_local"),
    ("https://[fd00:ec2::254]/", "cloud_metadata"),
    ("https://[fec0::1]/", "site_local"),
    ("https://[ff02::1]/", "multicast"),
    ("https://[2001:db8::1]/", "documentation"),
    ("https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "protocol_assignment"),  # Teredo
    ("https://[100::1]/", "reserved"),
    ("https://[64:ff9b:1::1]/", "private"),
    ("https://[4000::1]/", "not_global"),
    ("https://[v1.fe]/", "bad_ipv6"),
    ("https://[::ffff:1.2.3]/", "bad_ipv6"),
    # IPv4 inside IPv6, judged by the embedded address
    ("https://[::ffff:127.0.0.1]/", "loopback"),
    ("https://[0:0:0:0:0:FFFF:7F00:0001]/", "loopback"),
    ("https://[::ffff:a9fe:a9fe]/", "cloud_metadata"),
    ("https://[::ffff:10.1.2.3]/", "private"),
    ("https://[::127.0.0.1]/", "loopback"),
    ("https://[::a00:1]/", "private"),
    ("https://[64:ff9b::7f00:1]/", "loopback"),
    ("https://[64:ff9b::a9fe:a9fe]/", "cloud_metadata"),
    ("https://[2002:7f00:1::1]/", "loopback"),
    ("https://[2002:c0a8:101::]/", "private"),
    # numeric IPv4 spellings
    ("https://2130706433/", "non_canonical_ipv4"),
    ("https://0x7f.0.0.1/", "non_canonical_ipv4"),
    ("https://0x7f000001/", "non_canonical_ipv4"),
    ("https://0177.0.0.1/", "non_canonical_ipv4"),
    ("https://127.1/", "non_canonical_ipv4"),
    ("https://127.0.1/", "non_canonical_ipv4"),
    ("https://127.000.000.001/", "non_canonical_ipv4"),
    ("https://1.2.3.4.5/", "non_canonical_ipv4"),
    ("https://256.1.1.1/", "non_canonical_ipv4"),
    ("https://127.0.0.0x1/", "non_canonical_ipv4"),
    ("https://example.0x/", "non_canonical_ipv4"),
    ("https://127.0.0.1./", "loopback"),
    # names
    ("https://localhost/", "localhost"),
    ("https://LOCALHOST/", "localhost"),
    ("https://localhost./", "localhost"),
    ("https://localhost:8443/", "localhost"),
    ("https://app.localhost/", "localhost"),
    ("https://a.b.LocalHost./", "localhost"),
    ("https://metadata.google.internal/computeMetadata/v1/", "cloud_metadata"),
    ("https://METADATA.GOOGLE.INTERNAL./", "cloud_metadata"),
    ("https://metadata/", "cloud_metadata"),
    ("https://metadata.goog/", "cloud_metadata"),
    ("https://instance-data.ec2.internal/", "cloud_metadata"),
    ("https://printer.local/", "special_use_name"),
    ("https://router.home.arpa/", "special_use_name"),
    ("https://site.test/", "special_use_name"),
    ("https://x.invalid/", "special_use_name"),
    ("https://abc.onion/", "special_use_name"),
    ("https://intranet/", "single_label_host"),
    ("https://localhost../", "bad_hostname"),
    ("https://exa_mple.com/", "bad_hostname"),
    ("https://-example.com/", "bad_hostname"),
    ("https://example-.com/", "bad_hostname"),
    ("https://a..example.com/", "bad_hostname"),
    ("https://" + "a" * 64 + ".com/", "bad_hostname"),
    ("https://" + "a." * 127 + "com/", "bad_hostname"),
    ("https://ex!ample.com/", "bad_hostname"),
    # encodings and characters
    ("https://%6c%6f%63%61%6c%68%6f%73%74/", "percent_encoded_host"),
    ("https://127.0.0.%31/", "percent_encoded_host"),
    ("https://example.com/%zz", "malformed_url"),
    ("https://exa mple.com/", "invalid_character"),
    (" https://example.com/", "invalid_character"),
    ("https://example.com/\n", "invalid_character"),
    ("https://example.com\t/", "invalid_character"),
    ("https://example.com/\x00", "invalid_character"),
    ("https://bücher.example/", "invalid_character"),
    ("https://１２７.0.0.1/", "invalid_character"),
    ("https://127。0。0。1/", "invalid_character"),
    ("https://example.com/<script>", "invalid_character"),
    ("https://example.com/" + "a" * MAX_URL_LENGTH, "too_long"),
    ("", "malformed_url"),
]

PUBLIC = [
    "https://example.com/cb",
    "https://EXAMPLE.com/cb",
    "HTTPS://example.com/cb",
    "https://example.com./cb",
    "https://hooks.example.com:8443/openwop/cb?run=acme%2Frun-1#frag",
    "https://xn--bcher-kva.example/",
    "https://a-b.c-d.example.org/",
    "https://1.2.3.example.com/",
    "https://93.184.216.34/x",
    "https://8.8.8.8:443/",
    "https://[2606:2800:220:1:248:1893:25c8:1946]/x",
    "https://[2606:2800:220:1:248:1893:25c8:1946]:8443/x",
    "https://[::ffff:8.8.8.8]/",
    "https://[::ffff:808:808]/",
    "https://[64:ff9b::808:808]/",
    "https://[2002:808:808::1]/",
    "https://example.com/" + "a" * (MAX_URL_LENGTH - 20),
]


@pytest.mark.parametrize(("url", "reason"), HOSTILE)
def test_hostile_urls_are_refused_with_a_reason(url: str, reason: str) -> None:
    with pytest.raises(ValidationError) as caught:
        check_url(url)
    error = caught.value
    assert (error.code, error.status) == ("validation_error", 400)
    assert error.details == {"field": "callbackUrl", "reason": reason}
    assert error.message.startswith("callbackUrl ")


def test_the_hostile_table_is_big_enough_and_uses_only_known_reasons() -> None:
    assert len(HOSTILE) >= 40
    assert {reason for _, reason in HOSTILE} <= {r.value for r in EgressRefusal}


@pytest.mark.parametrize("url", PUBLIC)
def test_public_https_urls_are_accepted(url: str) -> None:
    check_url(url)


def test_the_field_is_named_in_details_and_the_url_is_not_echoed() -> None:
    with pytest.raises(ValidationError) as caught:
        check_url("https://alice:hunter2@10.0.0.1/", field="webhookUrl")
    assert caught.value.details == {"field": "webhookUrl", "reason": "userinfo"}
    assert "hunter2" not in caught.value.message
    assert caught.value.envelope()["details"]["field"] == "webhookUrl"


def test_embedded_ipv4_is_judged_both_ways() -> None:
    check_url("https://[::ffff:8.8.8.8]/")
    with pytest.raises(ValidationError, match="loopback"):
        check_url("https://[64:ff9b::7f00:1]/")


# --- the test-only allowance ------------------------------------------------------------------


@pytest.mark.parametrize(
    "url", ["https://127.0.0.1:8443/cb", "https://[::1]:8443/cb", "https://localhost:8443/cb"]
)
def test_allowance_admits_only_the_named_loopback_port(url: str) -> None:
    allow = AllowList(loopback_ports={8443})
    check_url(url, allow=allow)
    with pytest.raises(ValidationError) as caught:
        check_url(url.replace("8443", "8444"), allow=allow)
    assert caught.value.details is not None
    assert caught.value.details["reason"] in {"loopback", "localhost"}
    with pytest.raises(ValidationError, match="https"):
        check_url(url.replace("https", "http"), allow=allow)


def test_allowance_uses_the_default_port() -> None:
    check_url("https://127.0.0.1/", allow=AllowList(loopback_ports={443}))
    with pytest.raises(ValidationError):
        check_url("https://127.0.0.1/", allow=AllowList(loopback_ports={8443}))


def test_plain_http_needs_its_own_allowance() -> None:
    allow = AllowList(loopback_http_ports={9000})
    check_url("http://127.0.0.1:9000/cb", allow=allow)
    check_url("https://127.0.0.1:9000/cb", allow=allow)
    for url, reason in [
        ("http://127.0.0.1:9001/cb", "not_https"),
        ("http://example.com:9000/cb", "not_https"),
        ("http://10.0.0.1:9000/cb", "not_https"),
        ("ftp://127.0.0.1:9000/cb", "not_https"),
    ]:
        with pytest.raises(ValidationError) as caught:
            check_url(url, allow=allow)
        assert caught.value.details == {"field": "callbackUrl", "reason": reason}


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://10.0.0.1:8443/", "private"),
        ("https://169.254.169.254:8443/", "cloud_metadata"),
        ("https://app.localhost:8443/", "localhost"),
        ("https://user@127.0.0.1:8443/", "userinfo"),
        ("https://2130706433:8443/", "non_canonical_ipv4"),
    ],
)
def test_allowance_relaxes_nothing_but_loopback(url: str, reason: str) -> None:
    with pytest.raises(ValidationError) as caught:
        check_url(url, allow=AllowList(loopback_ports={8443}, loopback_http_ports={8443}))
    assert caught.value.details == {"field": "callbackUrl", "reason": reason}


@pytest.mark.parametrize("ports", [{0}, {65536}, {-1}])
def test_allowance_refuses_impossible_ports(ports: set[int]) -> None:
    with pytest.raises(ValueError, match=r"1\.\.65535"):
        AllowList(loopback_ports=ports)


# --- delivery-time re-check -------------------------------------------------------------------


def test_resolved_public_addresses_pass_and_are_returned_parsed() -> None:
    got = check_resolved_addresses("example.com", ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"])
    assert got == (
        ipaddress.ip_address("93.184.216.34"),
        ipaddress.ip_address("2606:2800:220:1:248:1893:25c8:1946"),
    )
    check_resolved_addresses("example.com", [ipaddress.ip_address("8.8.8.8")])


@pytest.mark.parametrize(
    ("addresses", "reason"),
    [
        (["10.0.0.7"], "private"),
        (["93.184.216.34", "127.0.0.1"], "loopback"),
        (["169.254.169.254"], "cloud_metadata"),
        (["::ffff:192.168.0.1"], "private"),
        (["fe80::1%eth0"], "ipv6_zone_id"),
        (["fd00:ec2::254"], "cloud_metadata"),
        ([], "no_addresses"),
        (["not-an-ip"], "bad_address"),
    ],
)
def test_a_public_name_resolving_to_a_private_address_is_refused(addresses: list[str], reason: str) -> None:
    with pytest.raises(ValidationError) as caught:
        check_resolved_addresses("hooks.example.com", addresses)
    assert caught.value.details == {"field": "callbackUrl", "reason": reason}


@pytest.mark.parametrize(
    ("host", "reason"),
    [
        ("localhost", "localhost"),
        ("metadata.google.internal", "cloud_metadata"),
        ("127.0.0.1", "loopback"),
        ("[::1]", "loopback"),
        ("fe80::1%eth0", "ipv6_zone_id"),
    ],
)
def test_the_host_itself_is_rechecked(host: str, reason: str) -> None:
    with pytest.raises(ValidationError) as caught:
        check_resolved_addresses(host, ["93.184.216.34"])
    assert caught.value.details == {"field": "callbackUrl", "reason": reason}


def test_resolved_loopback_needs_the_allowance_and_its_port() -> None:
    allow = AllowList(loopback_ports={8443})
    assert check_resolved_addresses("localhost", ["127.0.0.1", "::1"], port=8443, allow=allow)
    with pytest.raises(ValidationError):
        check_resolved_addresses("localhost", ["127.0.0.1"], port=8444, allow=allow)
    with pytest.raises(ValidationError):
        check_resolved_addresses("localhost", ["127.0.0.1"], allow=allow)
    with pytest.raises(ValidationError) as caught:
        check_resolved_addresses("localhost", ["127.0.0.1", "10.0.0.1"], port=8443, allow=allow)
    assert caught.value.details == {"field": "callbackUrl", "reason": "private"}


# --- properties -------------------------------------------------------------------------------


@given(st.text(max_size=300))
def test_random_input_is_accepted_or_refused_with_a_validation_error(text: str) -> None:
    for url in (text, "https://" + text, "https://[" + text):
        try:
            check_url(url)
        except ValidationError as error:
            assert error.details is not None
            assert error.details["reason"] in {r.value for r in EgressRefusal}


@given(st.ip_addresses())
def test_an_ip_literal_and_its_resolution_get_the_same_verdict(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> None:
    literal = f"https://[{ip}]/" if ip.version == 6 else f"https://{ip}/"
    try:
        check_url(literal)
        literal_ok = True
    except ValidationError:
        literal_ok = False
    try:
        check_resolved_addresses("example.com", [ip])
        resolved_ok = True
    except ValidationError:
        resolved_ok = False
    assert literal_ok == resolved_ok

"""Independent Entra clients against the sandbox: Microsoft's MSAL and azure-identity acquire
tokens (client secret and client certificate, RS256 with x5t and PS256 with x5t#S256), plain
requests drive the v1 endpoint, and PyJWT verifies every token against the keys the OpenID
metadata publishes. Each refusal is checked in Entra's token_error shape.

Run by sandbox/tests/entra_clients.rs with the sandbox's endpoints in the environment:
ENTRA_AUTHORITY (https://127.0.0.1:PORT), ENTRA_TENANT_ID, ENTRA_GRAPH (https://127.0.0.1:PORT),
ENTRA_ADMIN_ID / ENTRA_ADMIN_SECRET (a client holding Graph's Application.ReadWrite.OwnedBy)
and ENTRA_CA (the sandbox CA's PEM file). Prints the names of the checks that passed, one a
line; any failed check raises and exits non-zero.
"""

import base64
import datetime
import hashlib
import json
import os
import sys
import tempfile

import jwt
import msal
import requests
from azure.core.exceptions import ClientAuthenticationError
from azure.identity import CertificateCredential, ClientSecretCredential
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

AUTHORITY = os.environ["ENTRA_AUTHORITY"].rstrip("/")
TENANT = os.environ["ENTRA_TENANT_ID"]
GRAPH = os.environ["ENTRA_GRAPH"].rstrip("/")
ADMIN_ID = os.environ["ENTRA_ADMIN_ID"]
ADMIN_SECRET = os.environ["ENTRA_ADMIN_SECRET"]
CA = os.environ["ENTRA_CA"]
INSTANCE_DISCOVERY = f"{AUTHORITY}/common/discovery/instance"
V1_ISSUER = f"https://sts.windows.net/{TENANT}/"
V2_ISSUER = f"https://login.microsoftonline.com/{TENANT}/v2.0"
GRAPH_RESOURCE = "https://graph.microsoft.com"
ARM_RESOURCE = "https://management.azure.com"
LIFETIME = 3599


def passed(name):
    print(name, flush=True)


def expect(condition, message):
    if not condition:
        raise AssertionError(message)


def get_json(url, **kwargs):
    resp = requests.get(url, verify=CA, timeout=30, **kwargs)
    expect(resp.status_code == 200, f"GET {url}: {resp.status_code} {resp.text}")
    return resp.json()


# --- published keys -------------------------------------------------------------------------

def published_keys():
    """The JWKS of the v2.0 and v1 metadata documents, each key checked against its x5c."""
    v2 = get_json(f"{AUTHORITY}/{TENANT}/v2.0/.well-known/openid-configuration")
    v1 = get_json(f"{AUTHORITY}/{TENANT}/.well-known/openid-configuration")
    expect(v2["issuer"] == V2_ISSUER, f"v2.0 metadata issuer: {v2['issuer']}")
    expect(v1["issuer"] == V1_ISSUER, f"v1 metadata issuer: {v1['issuer']}")
    expect(v2["token_endpoint"] == f"{AUTHORITY}/{TENANT}/oauth2/v2.0/token", v2["token_endpoint"])
    expect(v1["token_endpoint"] == f"{AUTHORITY}/{TENANT}/oauth2/token", v1["token_endpoint"])
    v2_keys = get_json(v2["jwks_uri"])["keys"]
    v1_keys = get_json(v1["jwks_uri"])["keys"]
    expect(v2_keys and v1_keys, "both documents publish keys")
    for key in v2_keys + v1_keys:
        for field in ("kty", "use", "kid", "x5t", "n", "e", "x5c"):
            expect(field in key, f"JWKS key has {field}: {key}")
        expect(key["kty"] == "RSA" and key["use"] == "sig", f"an RSA signing key: {key}")
        der = base64.b64decode(key["x5c"][0])
        cert = x509.load_der_x509_certificate(der)
        thumbprint = base64.urlsafe_b64encode(hashlib.sha1(der).digest()).rstrip(b"=").decode()
        expect(key["x5t"] == thumbprint, "x5t is the certificate's SHA-1 thumbprint")
        numbers = cert.public_key().public_numbers()
        expect(jwt.PyJWK(key).key.public_numbers() == numbers, "n and e are the certificate's key")
    for key in v2_keys:
        expect(key.get("issuer") == V2_ISSUER, f"v2.0 keys name the issuer: {key.get('issuer')}")
    passed("jwks_published_with_certificates")
    for alias in ("organizations", "common"):
        doc = get_json(f"{AUTHORITY}/{alias}/v2.0/.well-known/openid-configuration")
        expect(doc["issuer"] == "https://login.microsoftonline.com/{tenantid}/v2.0", f"{alias}: {doc['issuer']}")
        expect(get_json(doc["jwks_uri"])["keys"], f"{alias} publishes keys")
    passed("organizations_and_common_metadata")
    return {k["kid"]: jwt.PyJWK(k) for k in v2_keys + v1_keys}


def verified(token, keys, audience, issuer):
    """The claims of `token` once PyJWT has checked its signature with the published key its
    header names, its audience and issuer. Times are compared with each other, not with this
    machine's clock: the sandbox may run on a simulated one."""
    header = jwt.get_unverified_header(token)
    expect(header["alg"] == "RS256" and header["typ"] == "JWT", f"header: {header}")
    expect(header["kid"] in keys and header["x5t"] == header["kid"], f"kid names a published key: {header}")
    claims = jwt.decode(
        token,
        keys[header["kid"]].key,
        algorithms=["RS256"],
        audience=audience,
        issuer=issuer,
        options={"verify_exp": False, "verify_nbf": False, "verify_iat": False},
    )
    expect(claims["tid"] == TENANT, "tid")
    expect(claims["idtyp"] == "app", "idtyp")
    expect(claims["sub"] == claims["oid"], "an app token's sub is its oid")
    expect(claims["nbf"] == claims["iat"] and claims["exp"] - claims["iat"] == LIFETIME, "lifetime")
    for opaque in ("uti", "rh", "aio"):
        expect(isinstance(claims.get(opaque), str) and claims[opaque], f"{opaque} present")
    return claims


def v1_claims(claims, client_id, acr):
    expect(claims["ver"] == "1.0", f"ver: {claims}")
    expect(claims["appid"] == client_id and claims["appidacr"] == acr, f"appid/appidacr: {claims}")
    expect(claims["idp"] == V1_ISSUER, "idp")
    expect("azp" not in claims, "v1 tokens have no azp")


def v2_claims(claims, client_id, acr):
    expect(claims["ver"] == "2.0", f"ver: {claims}")
    expect(claims["azp"] == client_id and claims["azpacr"] == acr, f"azp/azpacr: {claims}")
    expect("appid" not in claims, "v2.0 tokens have no appid")


# --- clients ---------------------------------------------------------------------------------

def msal_app(client_id, credential, instance_discovery=False):
    # With instance discovery on, MSAL 1.34 also asks login.microsoftonline.com for authority
    # aliases before each token request, whatever endpoint it was given: off for tokens, and
    # instance discovery checked once through MSAL's construction in main().
    return msal.ConfidentialClientApplication(
        client_id,
        client_credential=credential,
        authority=f"{AUTHORITY}/{TENANT}",
        instance_discovery=instance_discovery,
        verify=CA,
        token_cache=msal.TokenCache(),
    )


def msal_token(client_id, credential, scope):
    result = msal_app(client_id, credential).acquire_token_for_client([scope])
    expect("access_token" in result, f"MSAL token for {client_id}: {result}")
    expect(result["token_type"] == "Bearer", f"token_type: {result}")
    return result["access_token"]


def msal_refusal(client_id, credential, scope):
    result = msal_app(client_id, credential).acquire_token_for_client([scope])
    expect("access_token" not in result, f"refused: {result}")
    return result


def token_error(result, error, code):
    """`result` is Entra's token_error body with `error` and AADSTS `code`."""
    expect(result.get("error") == error, f"error {error}: {result}")
    expect(result.get("error_codes") == [code], f"error_codes [{code}]: {result}")
    description = result.get("error_description", "")
    expect(description.startswith(f"AADSTS{code}: "), description)
    for part in ("Trace ID: ", "Correlation ID: ", "Timestamp: "):
        expect(part in description, f"{part!r} in {description}")
    stamp = result.get("timestamp", "")
    expect(stamp.endswith("Z") and f"Timestamp: {stamp}" in description, f"timestamp {stamp}")
    datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%SZ")
    for field in ("trace_id", "correlation_id"):
        expect(result.get(field) and result[field] in description, f"{field} in the description")


def post_token(path, form):
    resp = requests.post(f"{AUTHORITY}/{TENANT}/{path}", data=form, verify=CA, timeout=30)
    return resp.status_code, resp.json()


# --- Graph set-up ------------------------------------------------------------------------------

class Graph:
    def __init__(self, token):
        self.headers = {"Authorization": f"Bearer {token}"}

    def call(self, method, path, body=None, headers=None):
        resp = requests.request(
            method, f"{GRAPH}/v1.0/{path}", json=body, verify=CA, timeout=30,
            headers={**self.headers, **(headers or {})},
        )
        return resp.status_code, (resp.json() if resp.content else None)

    def ok(self, method, path, body=None):
        status, answer = self.call(method, path, body)
        expect(200 <= status < 300, f"{method} {path}: {status} {answer}")
        return answer

    def application(self, name, **extra):
        app = self.ok("POST", "applications", {"displayName": name, **extra})
        sp = self.ok("POST", "servicePrincipals", {"appId": app["appId"]})
        return app, sp

    def secret(self, app, end=None):
        body = {"passwordCredential": {"displayName": "client tests"}}
        if end:
            body["passwordCredential"]["endDateTime"] = end
        return self.ok("POST", f"applications/{app['id']}/addPassword", body)["secretText"]


def certificate(name):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = datetime.datetime.now(datetime.timezone.utc)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        # Wide dates: the sandbox may run on a simulated clock.
        .not_valid_before(now - datetime.timedelta(days=3650))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .sign(key, hashes.SHA256())
    )
    return key, cert


def pem_key(key):
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def main():
    keys = published_keys()

    # The administrator signs in with MSAL for Graph.
    admin_token = msal_token(ADMIN_ID, ADMIN_SECRET, f"{GRAPH_RESOURCE}/.default")
    claims = verified(admin_token, keys, GRAPH_RESOURCE, V1_ISSUER)
    v1_claims(claims, ADMIN_ID, "1")
    expect("Application.ReadWrite.OwnedBy" in claims.get("roles", []), f"roles: {claims}")
    passed("msal_secret_v1_token_verifies")
    graph = Graph(admin_token)

    app, sp = graph.application("entra-clients-secret")
    secret = graph.secret(app)

    # azure-identity with a secret, for ARM.
    credential = ClientSecretCredential(
        TENANT, app["appId"], secret, authority=AUTHORITY, disable_instance_discovery=True,
        connection_verify=CA,
    )
    token = credential.get_token(f"{ARM_RESOURCE}/.default").token
    claims = verified(token, keys, ARM_RESOURCE, V1_ISSUER)
    v1_claims(claims, app["appId"], "1")
    expect(claims["oid"] == sp["id"], "oid is the service principal's")
    passed("azure_identity_secret_token_verifies")

    # The v1 endpoint: resource=, numbers as strings, the resource echoed.
    status, body = post_token("oauth2/token", {
        "grant_type": "client_credentials", "client_id": app["appId"], "client_secret": secret,
        "resource": "https://management.core.windows.net/",
    })
    expect(status == 200, f"v1 token: {status} {body}")
    expect(body["expires_in"] == str(LIFETIME) and body["resource"] == "https://management.core.windows.net/", body)
    expect(int(body["expires_on"]) - int(body["not_before"]) == LIFETIME, body)
    claims = verified(body["access_token"], keys, "https://management.core.windows.net/", V1_ISSUER)
    v1_claims(claims, app["appId"], "1")
    passed("v1_endpoint_resource_token_verifies")

    # A resource whose application asks for v2.0 tokens gets one, whichever endpoint.
    api, _ = graph.application("entra-clients-api", identifierUris=[], api={"requestedAccessTokenVersion": 2})
    graph.ok("PATCH", f"applications/{api['id']}", {"identifierUris": [f"api://{api['appId']}"]})
    token = msal_token(app["appId"], secret, f"api://{api['appId']}/.default")
    claims = verified(token, keys, api["appId"], V2_ISSUER)
    v2_claims(claims, app["appId"], "1")
    passed("v2_token_for_a_v2_resource_verifies")

    # Client certificates: registered through Graph, then MSAL signs RS256 (x5t) from a PEM
    # and PS256 (x5t#S256) from a PFX; azure-identity from a PEM file.
    cert_app, cert_sp = graph.application("entra-clients-cert")
    key, cert = certificate("entra-clients-cert")
    der = cert.public_bytes(serialization.Encoding.DER)
    graph.ok("PATCH", f"applications/{cert_app['id']}", {"keyCredentials": [{
        "type": "AsymmetricX509Cert", "usage": "Verify", "key": base64.b64encode(der).decode(),
        "displayName": "CN=entra-clients-cert",
    }]})
    listed = graph.ok("GET", f"applications/{cert_app['id']}")["keyCredentials"]
    expect(len(listed) == 1 and listed[0]["key"] is None and listed[0]["keyId"], f"keyCredentials: {listed}")
    selected = graph.ok("GET", f"applications/{cert_app['id']}?$select=keyCredentials")["keyCredentials"]
    expect(base64.b64decode(selected[0]["key"]) == der, "key returned under $select")
    passed("graph_key_credentials")

    sha1 = cert.fingerprint(hashes.SHA1()).hex()
    token = msal_token(cert_app["appId"], {"private_key": pem_key(key), "thumbprint": sha1}, f"{ARM_RESOURCE}/.default")
    claims = verified(token, keys, ARM_RESOURCE, V1_ISSUER)
    v1_claims(claims, cert_app["appId"], "2")
    expect(claims["oid"] == cert_sp["id"], "oid")
    passed("msal_certificate_rs256_x5t")

    with tempfile.TemporaryDirectory() as tmp:
        pfx = os.path.join(tmp, "client.pfx")
        with open(pfx, "wb") as f:
            f.write(pkcs12.serialize_key_and_certificates(b"client", key, cert, None, serialization.NoEncryption()))
        token = msal_token(cert_app["appId"], {"private_key_pfx_path": pfx}, f"{GRAPH_RESOURCE}/.default")
        v1_claims(verified(token, keys, GRAPH_RESOURCE, V1_ISSUER), cert_app["appId"], "2")
        passed("msal_certificate_ps256_x5t_s256")

        pem = os.path.join(tmp, "client.pem")
        with open(pem, "w") as f:
            f.write(pem_key(key) + cert.public_bytes(serialization.Encoding.PEM).decode())
        credential = CertificateCredential(
            TENANT, cert_app["appId"], certificate_path=pem, authority=AUTHORITY,
            disable_instance_discovery=True, connection_verify=CA,
        )
        token = credential.get_token(f"{ARM_RESOURCE}/.default").token
        v1_claims(verified(token, keys, ARM_RESOURCE, V1_ISSUER), cert_app["appId"], "2")
        passed("azure_identity_certificate")

    # Refusals, each in Entra's body shape.
    token_error(msal_refusal(app["appId"], "not-the-secret", f"{ARM_RESOURCE}/.default"), "invalid_client", 7000215)
    passed("wrong_secret_7000215")
    unknown = "11111111-2222-3333-4444-555555555555"
    token_error(msal_refusal(unknown, "whatever", f"{ARM_RESOURCE}/.default"), "unauthorized_client", 700016)
    passed("unknown_app_700016")
    expired = graph.secret(app, end="2001-01-01T00:00:00Z")
    token_error(msal_refusal(app["appId"], expired, f"{ARM_RESOURCE}/.default"), "invalid_client", 7000222)
    passed("expired_secret_7000222")
    token_error(msal_refusal(app["appId"], secret, f"{GRAPH_RESOURCE}/User.Read"), "invalid_scope", 1002012)
    passed("scope_without_default_1002012")
    status, body = post_token("oauth2/v2.0/token", {
        "grant_type": "client_credentials", "client_id": app["appId"], "client_secret": secret,
        "scope": f"{GRAPH_RESOURCE}/.default {ARM_RESOURCE}/.default",
    })
    expect(status == 400, f"two resources: {status}")
    token_error(body, "invalid_scope", 70011)
    passed("two_resources_70011")
    token_error(msal_refusal(app["appId"], secret, "https://nothing.example/.default"), "invalid_resource", 500011)
    passed("unknown_resource_500011")
    other_key, other_cert = certificate("not-registered")
    refusal = msal_refusal(
        cert_app["appId"], {"private_key": pem_key(other_key), "thumbprint": other_cert.fingerprint(hashes.SHA1()).hex()},
        f"{ARM_RESOURCE}/.default",
    )
    token_error(refusal, "invalid_client", 700027)
    passed("unregistered_certificate_700027")
    try:
        ClientSecretCredential(
            TENANT, app["appId"], "not-the-secret", authority=AUTHORITY, disable_instance_discovery=True,
            connection_verify=CA,
        ).get_token(f"{ARM_RESOURCE}/.default")
        raise AssertionError("azure-identity accepted a wrong secret")
    except ClientAuthenticationError as e:
        expect("AADSTS7000215" in str(e), str(e))
    passed("azure_identity_reports_aadsts")

    # Instance discovery knows the sandbox host and no other: MSAL validates the authority
    # through it (asking by host, without the port) and reads the tenant's metadata it names.
    validated = msal_app(ADMIN_ID, ADMIN_SECRET, instance_discovery=INSTANCE_DISCOVERY)
    expect(validated.authority.token_endpoint == f"{AUTHORITY}/{TENANT}/oauth2/v2.0/token", "MSAL's token endpoint")
    found = get_json(INSTANCE_DISCOVERY, params={
        "api-version": "1.1", "authorization_endpoint": f"{AUTHORITY}/{TENANT}/oauth2/v2.0/authorize",
    })
    expect(found["tenant_discovery_endpoint"] == f"{AUTHORITY}/{TENANT}/v2.0/.well-known/openid-configuration", found)
    resp = requests.get(INSTANCE_DISCOVERY, verify=CA, timeout=30, params={
        "api-version": "1.1", "authorization_endpoint": f"https://login.example.org/{TENANT}/oauth2/v2.0/authorize",
    })
    expect(resp.status_code == 400, f"unknown instance: {resp.status_code}")
    token_error(resp.json(), "invalid_instance", 50049)
    passed("instance_discovery")

    # Graph gives applications no ETag: a conditional write is refused, not applied.
    status, answer = graph.call("PATCH", f"applications/{app['id']}", {"displayName": "renamed"}, {"If-Match": "W/\"1\""})
    expect(status == 400 and answer["error"]["code"] == "Request_BadRequest", f"If-Match: {status} {answer}")
    expect(graph.ok("GET", f"applications/{app['id']}")["displayName"] == "entra-clients-secret", "not renamed")
    passed("graph_if_match_refused")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # the failure, for the Rust test's message
        print(f"FAILED: {type(e).__name__}: {e}", file=sys.stderr)
        raise

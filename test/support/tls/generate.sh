#!/bin/sh
# Test-only certificates for test/store/cassandra-tls.test.ts (a local TLS endpoint the
# real driver connects to): a CA, a node certificate it signed for the name
# node.cassandra.test and 127.0.0.1, a client certificate it signed, and another CA that
# signed nothing here. Valid for 100 years; the CAs' keys are thrown away. Never use
# them anywhere but the tests. Run from this folder to make them again.
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
days=36500
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days $days -subj "/CN=Test Cassandra CA" -keyout "$tmp/ca-key.pem" -out ca.pem 2>/dev/null
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days $days -subj "/CN=Another Test CA" -keyout "$tmp/other-key.pem" -out other-ca.pem 2>/dev/null
sign() { # name subject extensions
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "$2" -keyout "$1-key.pem" -out "$tmp/$1.csr" 2>/dev/null
  printf '%s\n' "$3" > "$tmp/$1.ext"
  openssl x509 -req -in "$tmp/$1.csr" -CA ca.pem -CAkey "$tmp/ca-key.pem" -CAserial "$tmp/ca.srl" -CAcreateserial -days $days -extfile "$tmp/$1.ext" -out "$1.pem" 2>/dev/null
}
sign node "/CN=node.cassandra.test" "subjectAltName=DNS:node.cassandra.test,IP:127.0.0.1"
sign client "/CN=relay-test-client" "extendedKeyUsage=clientAuth"

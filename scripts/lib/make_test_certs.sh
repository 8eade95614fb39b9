#!/usr/bin/env bash
# make_test_certs.sh DIR: test certificates for the TLS tests and benchmark, made with openssl
# (P-256 keys, valid 2 days):
#   DIR/ca-cert.pem, ca-key.pem             a CA
#   DIR/server-cert.pem, server-key.pem     signed by it, for localhost and 127.0.0.1
#   DIR/client/                             libnbd's and qemu's tls-certificates directory: ca-cert.pem,
#                                           client-cert.pem and client-key.pem (a client of the CA)
#   DIR/nocert/                             ca-cert.pem only: a client without a certificate
#   DIR/rogue/                              ca-cert.pem, and a client certificate from another CA
#   DIR/rogue-cert.pem, rogue-key.pem       that certificate, and otherca-cert.pem its CA
#   DIR/expired-cert.pem, future-cert.pem   server-key.pem's certificate from the CA, valid only in
#                                           2020, and only from 2090 (`openssl ca`: fixed dates)
set -euo pipefail
dir=$1
mkdir -p "$dir"
cd "$dir"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ca() { # NAME
  key "$1-key.pem"
  openssl req -x509 -new -key "$1-key.pem" -days 2 -subj "/CN=ssdcache test $1" -out "$1-cert.pem" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
}
leaf() { # NAME CA EXTENSIONS
  key "$1-key.pem"
  openssl req -new -key "$1-key.pem" -subj "/CN=ssdcache test $1" -out "$1.csr"
  printf '%b\n' "$3" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2-cert.pem" -CAkey "$2-key.pem" -CAcreateserial -days 2 \
    -extfile "$1.ext" -out "$1-cert.pem" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
ca ca
ca otherca
leaf server ca 'basicConstraints=CA:FALSE\nsubjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth'
leaf client ca 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth'
leaf rogue otherca 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth'
dated() { # NAME START END: a server certificate valid from START to END (YYYYMMDDHHMMSSZ)
  mkdir -p ca-db
  : >ca-db/index.txt
  echo 1000 >ca-db/serial
  printf '%b\n' '[ca]\ndefault_ca = c\n[c]\ndatabase = ca-db/index.txt\nserial = ca-db/serial' \
    'new_certs_dir = ca-db\ndefault_md = sha256\npolicy = p\n[p]\ncommonName = supplied' >ca-db/ca.cnf
  printf '%b\n' 'basicConstraints=CA:FALSE\nsubjectAltName=DNS:localhost,IP:127.0.0.1' >ca-db/ext
  openssl req -new -key server-key.pem -subj "/CN=ssdcache test $1" -out "$1.csr"
  openssl ca -batch -notext -config ca-db/ca.cnf -cert ca-cert.pem -keyfile ca-key.pem -in "$1.csr" \
    -extfile ca-db/ext -startdate "$2" -enddate "$3" -out "$1-cert.pem" 2>/dev/null
  rm -rf "$1.csr" ca-db
}
dated expired 20200101000000Z 20200102000000Z
dated future 20900101000000Z 20900102000000Z
for d in client nocert rogue; do
  mkdir -p "$d"
  cp ca-cert.pem "$d/ca-cert.pem"
done
cp client-cert.pem client/client-cert.pem
cp client-key.pem client/client-key.pem
cp rogue-cert.pem rogue/client-cert.pem
cp rogue-key.pem rogue/client-key.pem

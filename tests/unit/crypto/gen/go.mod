module tunless/tests/unit/crypto/gen

go 1.23.0

require golang.org/x/crypto v0.37.0

require golang.org/x/sys v0.32.0 // indirect

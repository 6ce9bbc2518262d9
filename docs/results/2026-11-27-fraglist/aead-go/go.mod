module aeadbench

go 1.25.0

require golang.org/x/crypto v0.52.0

require golang.org/x/sys v0.45.0 // indirect

module github.com/segmentio/encoding

go 1.23

require github.com/segmentio/asm v1.1.3

require golang.org/x/sys v0.0.0-20211110154304-99a53858aa08 // indirect

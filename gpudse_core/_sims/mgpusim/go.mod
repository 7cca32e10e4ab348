module gpudse/sims/mgpusim

go 1.20

require (
	gitlab.com/akita/akita/v3 v3.0.0-alpha.23
	gitlab.com/akita/mem/v3 v3.0.0-alpha.10
	gitlab.com/akita/mgpusim/v3 v3.0.0-alpha.9
	gitlab.com/akita/noc/v3 v3.0.0-alpha.10
)

require (
	github.com/go-ole/go-ole v1.2.6 // indirect
	github.com/go-sql-driver/mysql v1.7.1 // indirect
	github.com/golang/mock v1.6.0 // indirect
	github.com/google/btree v1.1.2 // indirect
	github.com/google/pprof v0.0.0-20230510103437-eeec1cb781c3 // indirect
	github.com/gorilla/mux v1.8.0 // indirect
	github.com/mattn/go-sqlite3 v1.14.16 // indirect
	github.com/rs/xid v1.5.0 // indirect
	github.com/shirou/gopsutil v3.21.11+incompatible // indirect
	github.com/syifan/goseth v0.1.1 // indirect
	github.com/tebeka/atexit v0.3.0 // indirect
	github.com/tklauser/go-sysconf v0.3.11 // indirect
	github.com/tklauser/numcpus v0.6.0 // indirect
	github.com/yusufpapurcu/wmi v1.2.2 // indirect
	golang.org/x/sys v0.8.0 // indirect
)

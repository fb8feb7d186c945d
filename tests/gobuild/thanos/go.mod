// The Thanos server the fleet tests run (tests/go_servers.py builds it).
// Thanos's own go.mod carries replace directives, which `go install module@version`
// refuses, so this module of ours requires Thanos and repeats them (from
// github.com/thanos-io/thanos v0.42.5's go.mod); the go command resolves the rest.
module dnfsmon.test/thanos

go 1.26.10

require github.com/thanos-io/thanos v0.42.5

replace (
	capnproto.org/go/capnp/v3 => capnproto.org/go/capnp/v3 v3.0.0-alpha.30
	github.com/bradfitz/gomemcache => github.com/themihai/gomemcache v0.0.0-20180902122335-24332e2d58ab
	github.com/sercand/kuberesolver/v4 => github.com/sercand/kuberesolver/v5 v5.1.1
	github.com/vimeo/galaxycache => github.com/thanos-community/galaxycache v0.0.0-20211122094458-3a32041a1f1e
	gopkg.in/alecthomas/kingpin.v2 => github.com/alecthomas/kingpin v1.3.8-0.20210301060133-17f40c25f497
	zenhack.net/go/util => github.com/zenhack/go-util v0.0.0-20231005031245-66f5419c2aea
)

// Command vcsim serves govmomi's vCenter simulator (VPX model: datacenter
// DC0, cluster DC0_C0, datastore LocalDS_0, port group DC0_DVPG0, a few VMs)
// and its REST API (tags), built from the pinned github.com/vmware/govmomi
// module, with clones that keep their spec's configuration as on vCenter
// (clone.go). Upstream's vcsim main is a module the Go module proxy does not
// serve, so this is a small main of our own. It listens on loopback only:
// the simulator accepts any client that knows the password.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"log"
	"net"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"github.com/vmware/govmomi/simulator"
	_ "github.com/vmware/govmomi/vapi/simulator" // the vCenter REST API (tags, sessions)
)

func main() {
	listen := flag.String("l", "127.0.0.1:8989", "listen address (a loopback address only)")
	user := flag.String("username", "administrator@vsphere.local", "login user")
	pass := flag.String("password", "", "login password (required)")
	urlFile := flag.String("url-file", "", "write the SDK URL (without credentials) to this file once serving")
	flag.Parse()

	host, _, err := net.SplitHostPort(*listen)
	if err != nil {
		log.Fatalf("-l %q: %v", *listen, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		log.Fatalf("-l %q: only a loopback IP address is allowed (the simulator has no real authentication)", *listen)
	}
	if *pass == "" {
		log.Fatal("-password is required")
	}

	model := simulator.VPX()
	if err := model.Create(); err != nil {
		log.Fatalf("creating the inventory: %v", err)
	}
	defer model.Remove()
	keepCloneConfig(model.Map()) // as vCenter: a clone has its spec's configuration
	model.Service.Listen = &url.URL{Host: *listen, User: url.UserPassword(*user, *pass)}
	model.Service.RegisterEndpoints = true
	model.Service.TLS = new(tls.Config) // https with a self-signed certificate, as a vCenter
	srv := model.Service.NewServer()
	defer srv.Close()

	u := *srv.URL
	u.User = nil
	if *urlFile != "" {
		if err := os.WriteFile(*urlFile, []byte(u.String()+"\n"), 0o644); err != nil {
			log.Fatalf("writing %s: %v", *urlFile, err)
		}
	}
	fmt.Printf("vcsim serving %s (pid %d)\n", u.String(), os.Getpid())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
}

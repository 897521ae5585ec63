// Command fake-operand is the program the local pod runner's tests run as a
// container. It writes what it was started with to stdout (its argv, env,
// uid, hostname and the files named by --file), serves HTTP on --port and
// logs what happens:
//
//	/healthz  200, or 500 with --unhealthy
//	/readyz   503 until /ready was requested (or --ready was given), then 200
//	/ready    makes /readyz succeed
//	/hello    answers "hello from <hostname>"
//	/exit     exits with the code of the query parameter code
//
// --exit=N exits with N right after writing what it was started with;
// --try-write=PATH logs whether PATH can be created (and removes it).
// --watch=PATH logs each change of PATH's content. --whoami=DIR asks the
// API server at $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT who it is
// with the token and CA of DIR (the in-cluster client's way) and logs the
// answer. SIGTERM is logged before it exits 0 (or, with --ignore-sigterm,
// goes on).
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var mu sync.Mutex

func logf(format string, args ...any) {
	mu.Lock()
	defer mu.Unlock()
	fmt.Printf(format+"\n", args...)
}

func main() {
	port, exit := "8080", -1
	var files, writes []string
	unhealthy, ignoreTerm := false, false
	var watch, whoamiDir string
	var ready atomic.Bool
	for _, a := range os.Args[1:] {
		k, v, _ := strings.Cut(a, "=")
		switch k {
		case "--port":
			port = v
		case "--exit":
			exit, _ = strconv.Atoi(v)
		case "--file":
			files = append(files, v)
		case "--try-write":
			writes = append(writes, v)
		case "--ignore-sigterm":
			ignoreTerm = true
		case "--unhealthy":
			unhealthy = true
		case "--watch":
			watch = v
		case "--whoami":
			whoamiDir = v
		case "--ready":
			ready.Store(true)
		}
	}
	// Listen first: the probes can connect while the rest starts.
	var ln net.Listener
	if exit < 0 {
		var err error
		if ln, err = net.Listen("tcp", ":"+port); err != nil {
			logf("listening: %v", err)
			os.Exit(1)
		}
	}
	argv, _ := json.Marshal(os.Args)
	logf("argv: %s", argv)
	env := os.Environ()
	sort.Strings(env)
	for _, e := range env {
		logf("env: %s", e)
	}
	host, _ := os.Hostname()
	logf("uid: %d", os.Getuid())
	logf("hostname: %s", host)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			logf("file %s: error: %v", f, err)
			continue
		}
		logf("file %s: %q", f, data)
	}
	for _, w := range writes {
		if err := os.WriteFile(w, []byte("x"), 0o644); err != nil {
			logf("write %s: %v", w, err)
			continue
		}
		_ = os.Remove(w)
		logf("write %s: ok", w)
	}
	if whoamiDir != "" {
		if user, err := whoami(whoamiDir); err != nil {
			logf("whoami: error: %v", err)
		} else {
			logf("whoami: %s", user)
		}
	}
	if exit >= 0 {
		logf("exiting with %d", exit)
		os.Exit(exit)
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	go func() {
		for s := range sigs {
			logf("signal: %v", s)
			if !ignoreTerm {
				os.Exit(0)
			}
		}
	}()
	if watch != "" {
		go func() {
			last, _ := os.ReadFile(watch)
			for range time.Tick(50 * time.Millisecond) {
				data, err := os.ReadFile(watch)
				if err == nil && string(data) != string(last) {
					logf("changed %s: %q", watch, data)
					last = data
				}
			}
		}()
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if unhealthy {
			logf("healthz 500")
			http.Error(w, "unhealthy", http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			logf("readyz 503")
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/ready", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Swap(true) {
			logf("ready requested")
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/hello", func(w http.ResponseWriter, _ *http.Request) {
		logf("hello requested")
		fmt.Fprintf(w, "hello from %s\n", host)
	})
	mux.HandleFunc("/exit", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.URL.Query().Get("code"))
		logf("exit requested: %d", code)
		os.Exit(code)
	})
	logf("listening on :%s", port)
	if err := http.Serve(ln, mux); err != nil {
		logf("serving: %v", err)
		os.Exit(1)
	}
}

// whoami sends a SelfSubjectReview to the API server of the kubernetes
// Service and returns the user name and pod name it answers.
func whoami(dir string) (string, error) {
	token, err := os.ReadFile(dir + "/token")
	if err != nil {
		return "", err
	}
	ca, err := os.ReadFile(dir + "/ca.crt")
	if err != nil {
		return "", err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return "", fmt.Errorf("no certificate in %s/ca.crt", dir)
	}
	// envtest's serving certificate names localhost and 127.0.0.1, not the
	// kubernetes Service's ClusterIP.
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"},
		Proxy:           nil,
	}}
	addr := net.JoinHostPort(os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT"))
	body := []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
	req, err := http.NewRequest(http.MethodPost, "https://"+addr+"/apis/authentication.k8s.io/v1/selfsubjectreviews", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+string(token))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, data)
	}
	var review struct {
		Status struct {
			UserInfo struct {
				Username string              `json:"username"`
				Extra    map[string][]string `json:"extra"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	if err := json.Unmarshal(data, &review); err != nil {
		return "", err
	}
	u := review.Status.UserInfo
	return fmt.Sprintf("%s pod=%s", u.Username, strings.Join(u.Extra["authentication.kubernetes.io/pod-name"], ",")), nil
}

package main

import (
	"fmt"
	"sort"
	"strings"
)

// previous holds the figures of docs/performance.md ("MachineSet scale
// benchmark", the run before the write reductions of issue 22: 500
// replicas, the development machine), per Machine, so each run prints its
// figures beside them. Keys are "resource[/subresource] VERB" for the API
// server's counters and "component VERB" for the operands' client counters.
var previous = map[string]map[string]float64{
	"scale up": {
		"all":         23.4,
		"events POST": 2.17, "leases GET": 1.00, "leases POST": 1.00, "leases PUT": 0.33,
		"machines GET": 1.00, "machines PATCH": 2.02, "machines POST": 1.00, "machines/status PATCH": 4.22,
		"nodes GET": 2.16, "nodes PATCH": 4.10, "nodes POST": 1.00, "nodes/status PATCH": 2.44,
	},
	"scale down": {
		"all":         22.2,
		"events POST": 4.40, "leases DELETE": 1.01, "leases GET": 2.25, "leases PUT": 1.30,
		"machines DELETE": 1.00, "machines GET": 0.02, "machines PATCH": 2.02, "machines/status PATCH": 1.15,
		"nodes DELETE": 2.08, "nodes GET": 2.43, "nodes PATCH": 3.06, "nodes/status PATCH": 0.04,
	},
}

// previousComponents are the operands' own requests per Machine in the same
// run as previous (rest_client_requests_total, by component and verb).
// (Measured with the same binaries on a busier machine, 0→500 in 198 s:
// more heartbeats fall into a slower run, so the totals run higher than
// above.)
var previousComponents = map[string]map[string]float64{
	"scale up": {
		"operands all":                     17.10,
		"machine-controller-manager all":   10.60,
		"machine-controller-manager GET":   3.07,
		"machine-controller-manager PATCH": 5.48,
		"machine-controller-manager POST":  2.00,
		"machine-controller-manager PUT":   0.04,
		"machineset-controller all":        2.43,
		"machineset-controller GET":        0.04,
		"machineset-controller PATCH":      0.35,
		"machineset-controller POST":       2.00,
		"machineset-controller PUT":        0.04,
		"nodelink-controller all":          4.07,
		"nodelink-controller GET":          0.05,
		"nodelink-controller PATCH":        3.98,
		"nodelink-controller PUT":          0.04,
	},
	"scale down": {
		"operands all":                      14.61,
		"machine-controller-manager all":    12.56,
		"machine-controller-manager DELETE": 2.03,
		"machine-controller-manager GET":    3.39,
		"machine-controller-manager PATCH":  4.09,
		"machine-controller-manager POST":   3.03,
		"machine-controller-manager PUT":    0.01,
		"machineset-controller all":         2.03,
		"machineset-controller DELETE":      1.00,
		"machineset-controller GET":         0.01,
		"machineset-controller PATCH":       0.01,
		"machineset-controller POST":        1.00,
		"machineset-controller PUT":         0.01,
		"nodelink-controller all":           0.02,
		"nodelink-controller PUT":           0.01,
	},
}

// ratio renders now/before, or "-" without a previous figure.
func ratio(now, before float64) string {
	if before == 0 {
		return "     -"
	}
	return fmt.Sprintf("%6.2f", now/before)
}

// reportComponents prints the operands' client requests per Machine by
// component and verb, with the previous figures and the ratio.
func reportComponents(phase string, after, before map[string]map[key]int, machines int) {
	fmt.Printf("  %s: client requests per Machine by component and verb (rest_client_requests_total; now / before / ratio):\n", phase)
	prev := previousComponents[phase]
	var names []string
	for n := range after {
		names = append(names, n)
	}
	sort.Strings(names)
	all := 0
	for _, n := range names {
		d := diff(after[n], before[n])
		total := 0
		var verbs []string
		for k, v := range d {
			total += v
			verbs = append(verbs, k.verb)
		}
		all += total
		sort.Strings(verbs)
		per := float64(total) / float64(machines)
		fmt.Printf("    %-28s %-7s %6.2f %6.2f %s\n", n, "all", per, prev[n+" all"], ratio(per, prev[n+" all"]))
		for _, v := range verbs {
			per := float64(d[key{verb: v}]) / float64(machines)
			fmt.Printf("    %-28s %-7s %6.2f %6.2f %s\n", "", v, per, prev[n+" "+v], ratio(per, prev[n+" "+v]))
		}
	}
	per := float64(all) / float64(machines)
	fmt.Printf("    %-28s %-7s %6.2f %6.2f %s\n", "operands together", "all", per, prev["operands all"], ratio(per, prev["operands all"]))
}

// report prints the requests on machines and nodes (and their
// subresources) per Machine, by verb, and the total of all requests.
func report(phase string, reqs map[key]int, machines int) {
	var keys []key
	total := 0
	for k, v := range reqs {
		total += v
		if k.resource == "machines" || k.resource == "nodes" || k.resource == "leases" || k.resource == "events" {
			keys = append(keys, k)
		}
	}
	// Rows of the previous run that are gone now show as 0.
	for name := range previous[phase] {
		resVerb := strings.Fields(name)
		if len(resVerb) != 2 {
			continue
		}
		res, sub, _ := strings.Cut(resVerb[0], "/")
		k := key{verb: resVerb[1], resource: res, subresource: sub}
		if _, ok := reqs[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].resource != keys[j].resource {
			return keys[i].resource < keys[j].resource
		}
		if keys[i].subresource != keys[j].subresource {
			return keys[i].subresource < keys[j].subresource
		}
		if keys[i].rejected != keys[j].rejected {
			return !keys[i].rejected
		}
		return keys[i].verb < keys[j].verb
	})
	prev := previous[phase]
	perAll := float64(total) / float64(machines)
	fmt.Printf("  %s: %d API requests in all, %.1f per Machine (before: %.1f, ratio %s); by resource and verb (count, per Machine, before, ratio):\n",
		phase, total, perAll, prev["all"], ratio(perAll, prev["all"]))
	for _, k := range keys {
		res := k.resource
		if k.subresource != "" {
			res += "/" + k.subresource
		}
		verb := k.verb
		if k.rejected {
			verb += " (rejected: 429/5xx)"
		}
		per := float64(reqs[k]) / float64(machines)
		before := 0.0
		if !k.rejected {
			before = prev[res+" "+k.verb]
		}
		fmt.Printf("    %-18s %-7s %6d  %6.2f %6.2f %s\n", res, verb, reqs[k], per, before, ratio(per, before))
	}
}

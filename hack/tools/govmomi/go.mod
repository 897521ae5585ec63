// Module govmomi pins govc and vcsim (govmomi's vSphere CLI and simulator)
// for the local vSphere (hack/vsphere). A module of its own so that the
// CLI's extra dependencies stay out of the project's go.mod; the govmomi
// version matches the one the project's vSphere provider is built with.
module github.com/machine-api-operator/machine-api-operator/hack/tools/govmomi

go 1.26.0

require github.com/vmware/govmomi v0.54.0

require (
	github.com/a8m/tree v0.0.0-20240104212747-2c8764a5f17e // indirect
	github.com/dougm/pretty v0.0.0-20160325215624-add1dbc86daf // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/rogpeppe/go-internal v1.16.0 // indirect
	github.com/xlab/treeprint v1.2.0 // indirect
	golang.org/x/text v0.34.0 // indirect
)

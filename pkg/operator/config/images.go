package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// Images is the content of images.json; unknown keys are ignored.
type Images struct {
	MachineAPIOperator            string `json:"machineAPIOperator"`
	KubeRBACProxy                 string `json:"kubeRBACProxy"`
	ClusterAPIControllerAWS       string `json:"clusterAPIControllerAWS"`
	ClusterAPIControllerOpenStack string `json:"clusterAPIControllerOpenStack"`
	ClusterAPIControllerBareMetal string `json:"clusterAPIControllerBareMetal"`
	ClusterAPIControllerAzure     string `json:"clusterAPIControllerAzure"`
	ClusterAPIControllerGCP       string `json:"clusterAPIControllerGCP"`
	ClusterAPIControllerVSphere   string `json:"clusterAPIControllerVSphere"`
	ClusterAPIControllerIBMCloud  string `json:"clusterAPIControllerIBMCloud"`
	ClusterAPIControllerPowerVS   string `json:"clusterAPIControllerPowerVS"`
	ClusterAPIControllerNutanix   string `json:"clusterAPIControllerNutanix"`
	ClusterAPIControllerKubemark  string `json:"clusterAPIControllerKubemark"`
}

// byKey returns the image of an images.json key ("" if unknown).
func (i Images) byKey(key string) string {
	data, err := json.Marshal(i)
	if err != nil {
		return ""
	}
	var m map[string]string
	if err := json.Unmarshal(data, &m); err != nil {
		return ""
	}
	return m[key]
}

// Reasons for bad input, used as ClusterOperator condition reasons.
const (
	ReasonInvalidImagesJSON      = "InvalidImagesJSON"
	ReasonInfrastructureNotFound = "InfrastructureNotFound"
	ReasonInvalidInfrastructure  = "InvalidInfrastructure"
)

// InputError is an input the user got wrong; Reason is a condition reason.
type InputError struct {
	Reason string
	Err    error
}

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// ReasonOf returns the InputError reason of err, or "" if err is not one.
func ReasonOf(err error) string {
	var ie *InputError
	if errors.As(err, &ie) {
		return ie.Reason
	}
	return ""
}

// LoadImages reads and validates images.json at path (InputErrors naming it).
func LoadImages(path string) (Images, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Images{}, &InputError{Reason: ReasonInvalidImagesJSON,
			Err: fmt.Errorf("reading images file %s: %w (mount the %s ConfigMap there or fix --images-json)", path, err, ImagesConfigMapName)}
	}
	images, err := ParseImages(data)
	if err != nil {
		return Images{}, &InputError{Reason: ReasonInvalidImagesJSON, Err: fmt.Errorf("images file %s: %w", path, err)}
	}
	return images, nil
}

// ParseImages decodes and validates images.json; errors say where it is wrong.
func ParseImages(data []byte) (Images, error) {
	var images Images
	if err := json.Unmarshal(data, &images); err != nil {
		return Images{}, malformedJSON(err)
	}
	if images.MachineAPIOperator == "" {
		return Images{}, errors.New(`"machineAPIOperator" is missing or empty: set it to the pull spec of the machine-api-operator image`)
	}
	return images, nil
}

// malformedJSON locates a json.Unmarshal error (all values are strings).
func malformedJSON(err error) error {
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("malformed JSON at byte offset %d: %w", syntaxErr.Offset, err)
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return fmt.Errorf("malformed JSON: %q: must be a string, not %s", typeErr.Field, typeErr.Value)
	case errors.As(err, &typeErr):
		return fmt.Errorf("malformed JSON: the document must be a JSON object, not %s", typeErr.Value)
	}
	return fmt.Errorf("malformed JSON: %w", err)
}

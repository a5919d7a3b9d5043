// The containers of rendered manifests' pod templates (DaemonSets,
// Deployments), each with the template it came from.

package chart

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Container is a container of a rendered pod template, with the template
// it came from.
type Container struct {
	Template string
	corev1.Container
}

// Containers lists the containers of the manifests' pod templates (their
// spec.template: DaemonSets, Deployments), in the manifests' order.
func Containers(ms []Manifest) ([]Container, error) {
	var out []Container
	for _, m := range ms {
		var obj struct {
			Spec struct {
				Template corev1.PodTemplateSpec `json:"template"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(m.YAML), &obj); err != nil {
			return nil, fmt.Errorf("%s: %w", m.Template, err)
		}
		for _, c := range obj.Spec.Template.Spec.Containers {
			out = append(out, Container{Template: m.Template, Container: c})
		}
	}
	return out, nil
}

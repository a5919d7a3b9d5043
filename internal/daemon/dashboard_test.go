// The chart's Grafana dashboard of tide (deploy/helm/carve-dra/dashboards)
// asks only for metrics this daemon serves, so that a renamed metric
// cannot leave a panel empty unnoticed (TestDashboardMetrics).

package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/carve-gpu/carve/internal/chart"
)

// servedMetrics are the names of the metrics the daemon's sources describe
// (prometheus.NewDesc's first argument), with the series a histogram adds.
func servedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	desc := regexp.MustCompile(`NewDesc\(\s*"(carve_[a-z0-9_]+)"`)
	served := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range desc.FindAllStringSubmatch(string(src), -1) {
			for _, s := range []string{"", "_bucket", "_sum", "_count"} {
				served[m[1]+s] = true
			}
		}
	}
	if len(served) < 40 {
		t.Fatalf("found %d metric names in the daemon's sources: is NewDesc still how they are made?", len(served)/4)
	}
	return served
}

// TestDashboardMetrics: the chart renders the dashboard's ConfigMap with
// Grafana's sidecar label, its JSON has panels, every query names only
// served metrics and every panel reads the dashboard's data source; with
// dashboard.enabled false nothing is rendered.
func TestDashboardMetrics(t *testing.T) {
	const dir = "../../deploy/helm/carve-dra"
	r := chart.Release{Name: "r", Namespace: "ns", KubeVersion: "v1.37.2"}
	ms, err := chart.Render(dir, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Data map[string]string `json:"data"`
	}
	found := false
	for _, m := range ms {
		if strings.HasSuffix(m.Template, "dashboard.yaml") {
			if err := yaml.Unmarshal([]byte(m.YAML), &cm); err != nil {
				t.Fatal(err)
			}
			found = true
		}
	}
	if !found {
		t.Fatal("no dashboard ConfigMap rendered")
	}
	if cm.Metadata.Labels["grafana_dashboard"] != "1" {
		t.Errorf("labels %v: no grafana_dashboard", cm.Metadata.Labels)
	}
	var d struct {
		Panels []struct {
			Title      string `json:"title"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(cm.Data["carve-tide.json"]), &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	if len(d.Panels) < 6 {
		t.Fatalf("%d panels", len(d.Panels))
	}
	served := servedMetrics(t)
	name := regexp.MustCompile(`carve_[a-z0-9_]+`)
	for _, p := range d.Panels {
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q reads data source %q", p.Title, p.Datasource.UID)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			names := name.FindAllString(q.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: query %q names no carve metric", p.Title, q.Expr)
			}
			for _, n := range names {
				if !served[n] {
					t.Errorf("panel %q asks for %s, which the daemon does not serve", p.Title, n)
				}
			}
		}
	}
	ms, err = chart.Render(dir, r, map[string]any{"dashboard": map[string]any{"enabled": false}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if strings.HasSuffix(m.Template, "dashboard.yaml") {
			t.Errorf("dashboard.enabled false still renders %s", m.Template)
		}
	}
}

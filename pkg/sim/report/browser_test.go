package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/sim/engine"
)

// chromiumFlags run a headless browser that reaches nothing: every request
// goes to a closed proxy port and every host name fails to resolve, so a
// report that needed the network would not draw.
var chromiumFlags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
	"--force-device-scale-factor=1", "--hide-scrollbars",
}

// findChromium returns Debian's chromium (or the browser GPUSCALE_CHROMIUM
// names), skipping the test when there is none.
func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("GPUSCALE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH (Debian: apt-get install chromium; or set GPUSCALE_CHROMIUM): skipping the browser test of the HTML report")
	return ""
}

// runChromium runs the browser on the page with a fresh profile and
// returns its standard output.
func runChromium(t *testing.T, chromium, page string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	all := append(append(append([]string{}, chromiumFlags...), "--user-data-dir="+t.TempDir()), args...)
	cmd := exec.CommandContext(ctx, chromium, append(all, "file://"+page)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second // helpers that keep the pipes open
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", chromium, strings.Join(args, " "), err, tail(stderr.String(), 2000))
	}
	return stdout.Bytes()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// probeScript runs in the page after its charts (the test adds it; the
// report has no such thing). For each chart it paints the canvas at once
// and records where echarts laid out the legend, the plot and the zoom
// slider, how many canvas pixels inside the plot have each run's colour,
// and where the chart sits on the page; the result goes into the body's
// data-probe attribute for --dump-dom.
const probeScript = `<script>
(function () {
  var colors = %s;
  var out = {height: document.documentElement.scrollHeight, charts: []};
  document.querySelectorAll(".chart").forEach(function (div) {
    var c = echarts.getInstanceByDom(div), m = c.getModel(), r = {id: div.id};
    c.getZr().flush();
    var rect = function (model) {
      var v = c.getViewOfComponentModel(model), b = v.group.getBoundingRect().clone(), tr = v.group.getComputedTransform();
      if (tr) { b.applyTransform(tr); }
      return [b.x, b.y, b.width, b.height];
    };
    var g = m.getComponent("grid").coordinateSystem.getRect();
    r.grid = [g.x, g.y, g.width, g.height];
    r.legend = rect(m.getComponent("legend"));
    r.slider = rect(m.getComponent("dataZoom", 0));
    var box = div.getBoundingClientRect();
    r.box = [box.left + window.scrollX, box.top + window.scrollY, box.width, box.height];
    var canvases = div.querySelectorAll("canvas");
    r.canvases = canvases.length;
    r.pixels = colors.map(function () { return 0; });
    var d = canvases[0].getContext("2d").getImageData(Math.round(g.x), Math.round(g.y), Math.round(g.width), Math.round(g.height)).data;
    for (var i = 0; i < d.length; i += 4) {
      for (var k = 0; k < colors.length; k++) {
        if (d[i + 3] > 200 && Math.abs(d[i] - colors[k][0]) + Math.abs(d[i + 1] - colors[k][1]) + Math.abs(d[i + 2] - colors[k][2]) < 30) { r.pixels[k]++; }
      }
    }
    out.charts.push(r);
  });
  document.body.setAttribute("data-probe", JSON.stringify(out));
})();
</script>
`

type probe struct {
	Height float64
	Charts []struct {
		ID                        string
		Grid, Legend, Slider, Box []float64
		Canvases                  int
		Pixels                    []int
	}
}

// browserRuns are three compared runs whose series differ, so that no
// run's lines hide under another's.
func browserRuns(t *testing.T) []Run {
	t.Helper()
	var runs []Run
	for i := range 3 {
		res := result(fmt.Sprintf("run-%d", i))
		res.Cost = float64(10 + i)
		s := engine.Series{Groups: []string{"cpu"}, Deployments: []string{"default/web"}}
		for k := range 120 {
			busy := k >= 20+10*i && k < 80+5*i
			n := 2 + 3*i
			if busy {
				n += 4
			}
			s.Times = append(s.Times, time.Duration(k)*time.Minute)
			s.Nodes = append(s.Nodes, []int{n})
			s.Pending = append(s.Pending, map[bool]int{true: 2 + 3*i}[k%40 < 5])
			s.GPUsProvisioned = append(s.GPUsProvisioned, int64(2*n))
			s.GPUsAllocated = append(s.GPUsAllocated, int64(n))
			s.Replicas = append(s.Replicas, []int{n - 1})
			s.Cost = append(s.Cost, float64(k*(i+1))/10)
		}
		res.Series = s
		r, err := NewRun(nil, res)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	return runs
}

func rgb(t *testing.T, hex string) [3]int {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(hex, "#"), 16, 32)
	if err != nil {
		t.Fatal(err)
	}
	return [3]int{int(v >> 16 & 0xff), int(v >> 8 & 0xff), int(v & 0xff)}
}

// TestReportInBrowser opens a compared report in headless Chromium with no
// network: the summary table is there, every chart drew on its canvas in
// every run's colour, legends and sliders stay off the plots, and a
// screenshot shows the runs' lines.
func TestReportInBrowser(t *testing.T) {
	chromium := findChromium(t)
	runs := browserRuns(t)
	var out bytes.Buffer
	if err := WriteHTML(&out, runs); err != nil {
		t.Fatal(err)
	}
	colors := make([][3]int, len(runs))
	for i := range runs {
		colors[i] = rgb(t, RunColor(i))
	}
	colorsJSON, _ := json.Marshal(colors)
	text := out.String()
	end := strings.LastIndex(text, "</body>")
	page := filepath.Join(t.TempDir(), "report.html")
	text = text[:end] + fmt.Sprintf(probeScript, colorsJSON) + text[end:]
	if err := os.WriteFile(page, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}

	dom := string(runChromium(t, chromium, page, "--window-size=1280,1000", "--dump-dom"))
	for _, r := range runs {
		if !regexp.MustCompile(`<tr[^>]*><td><span class="swatch"[^>]*></span>` + regexp.QuoteMeta(r.Name()) + `</td><td>\$` + fmt.Sprintf("%.2f", r.Result.Cost)).MatchString(dom) {
			t.Errorf("the summary table has no row for %s at $%.2f", r.Name(), r.Result.Cost)
		}
	}
	if !strings.Contains(dom, "Cheapest run: run-0 at $10.00") {
		t.Error("the page does not name the cheapest run")
	}
	m := regexp.MustCompile(`data-probe="([^"]*)"`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the charts' probe left no result: the page's scripts failed (no chart library?)\n%s", tail(dom, 1500))
	}
	var p probe
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Charts) != 5 {
		t.Fatalf("%d charts drawn, want 5", len(p.Charts))
	}
	for _, c := range p.Charts {
		if c.Canvases != 1 {
			t.Errorf("%s: %d canvases", c.ID, c.Canvases)
		}
		legendBottom, gridTop := c.Legend[1]+c.Legend[3], c.Grid[1]
		gridBottom, sliderTop := c.Grid[1]+c.Grid[3], c.Slider[1]
		if legendBottom > gridTop || gridBottom > sliderTop || c.Grid[3] < 150 {
			t.Errorf("%s: legend %v, plot %v, slider %v: want the legend above the plot, the slider below, the plot at least 150px high",
				c.ID, c.Legend, c.Grid, c.Slider)
		}
		for k, n := range c.Pixels {
			if n < 50 {
				t.Errorf("%s: %d pixels of %s's colour %s in the plot, want its lines", c.ID, n, runs[k].Name(), RunColor(k))
			}
		}
	}

	// What a person sees: the same colours in the screenshot, inside the
	// plots.
	shot := filepath.Join(t.TempDir(), "report.png")
	runChromium(t, chromium, page, fmt.Sprintf("--window-size=1280,%d", int(p.Height)+20), "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Charts {
		plot := image.Rect(int(c.Box[0]+c.Grid[0]), int(c.Box[1]+c.Grid[1]), int(c.Box[0]+c.Grid[0]+c.Grid[2]), int(c.Box[1]+c.Grid[1]+c.Grid[3]))
		if !plot.In(img.Bounds()) {
			t.Errorf("%s: plot %v outside the %v screenshot", c.ID, plot, img.Bounds())
			continue
		}
		for k, want := range colors {
			if n := countColor(img, plot, want); n < 50 {
				t.Errorf("screenshot, %s: %d pixels of %s's colour %s in the plot", c.ID, n, runs[k].Name(), RunColor(k))
			}
		}
	}
}

func countColor(img image.Image, r image.Rectangle, want [3]int) int {
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			d := abs(int(cr>>8)-want[0]) + abs(int(cg>>8)-want[1]) + abs(int(cb>>8)-want[2])
			if d < 30 {
				n++
			}
		}
	}
	return n
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

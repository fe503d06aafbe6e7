package bridge

import (
	"context"
	"testing"
	"time"
)

// TestCutoff holds cutoff to what shutdown needs of it: a cut cancels the
// calls running then and says so after a reset too; a call that starts
// between the cut and the reset is cut at once; one that starts after
// the reset is not; a released call is forgotten.
func TestCutoff(t *testing.T) {
	var c cutoff
	parent, stop := context.WithCancel(context.Background())
	defer stop()
	done, doneWatch := c.watch(parent)
	doneWatch.release()
	running, runningWatch := c.watch(parent)
	if running.Err() != nil {
		t.Fatal("a watched call is cancelled before any cut")
	}
	c.cut(3 * time.Second)
	if running.Err() == nil {
		t.Error("the cut did not cancel the running call")
	}
	if done.Err() == nil {
		t.Error("release did not cancel the released call's context")
	}
	late, lateWatch := c.watch(parent)
	if late.Err() == nil {
		t.Error("a call that started after the cut, before the reset, is not cut at once")
	}
	c.reset()
	after, afterWatch := c.watch(parent)
	if after.Err() != nil {
		t.Error("a call that started after the reset is cut")
	}
	for _, w := range []struct {
		name string
		w    watch
		cut  bool
	}{{"running", runningWatch, true}, {"late", lateWatch, true}, {"after", afterWatch, false}} {
		grace, cut := w.w.wasCut()
		if cut != w.cut || (cut && grace != 3*time.Second) {
			t.Errorf("%s: wasCut = %s, %v; want cut %v after 3s", w.name, grace, cut, w.cut)
		}
		w.w.release()
	}
	if len(c.running) != 0 {
		t.Errorf("%d calls still held after every one was released", len(c.running))
	}
}

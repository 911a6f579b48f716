package projections

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/opencarte/publisher/domain"
)

func TestChangedResourcesOfAppearingMenu(t *testing.T) {
	e := establishment(t)
	before := Render(e, 1)
	e.MenuTypes = append(e.MenuTypes, menuType("nouveau", domain.SourceUploaded, domain.MenuVersion{ID: "v1"}))
	after := render(e, nil).Bundle(1)
	if diff := cmp.Diff([]string{"menus", "menus/nouveau"}, ChangedResources(&before, &after)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

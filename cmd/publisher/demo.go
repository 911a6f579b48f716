package main

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"image/color"
	"io"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
)

//go:embed demo.json
var demoSnapshot []byte

// demoSlug is the slug of the sample establishment.
const demoSlug = "chez-marcel"

// loadDemo imports the sample establishment, makes sure it has a key to show, waits until it is
// served, and prints ready-to-paste requests.
func (m *Main) loadDemo(ctx context.Context, out io.Writer) error {
	if !m.Config.has(roleProjector) || m.HTTPURL == "" {
		return errors.New("--demo needs the api and projector roles")
	}
	snap, err := domain.ParseInput(bytes.NewReader(demoSnapshot))
	if err != nil {
		return err
	}
	// The daily menu is dated today and tomorrow, whatever the date, so the demo always has one.
	today := m.Clock.Today(mustLocation(snap.TimeZone))
	for i := range snap.MenuTypes {
		if snap.MenuTypes[i].Rotation != string(domain.RotationDaily) {
			continue
		}
		for j := range snap.MenuTypes[i].Versions {
			d := today.AddDays(j).String()
			snap.MenuTypes[i].Versions[j].ID, snap.MenuTypes[i].Versions[j].ReferenceDate = d, &d
		}
	}
	cardURL, err := m.uploadDemoFiles(ctx, &snap)
	if err != nil {
		return err
	}
	res, err := m.Commands.Import(ctx, app.Request{Slug: demoSlug}, snap)
	if err != nil {
		return err
	}
	if res.APIKey == "" {
		// Already imported by an earlier run: keys are shown once, so issue a new one.
		if res, err = m.Commands.RegenerateKey(ctx, app.Request{Slug: demoSlug}); err != nil {
			return err
		}
	}
	key := res.APIKey
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := m.Served(wctx, demoSlug, res.Version); err != nil {
		return fmt.Errorf("wait for the demo to be served: %w", err)
	}
	base := m.PublicURL()
	h := fmt.Sprintf("-H 'X-Api-Key: %s'", key)
	api := base + "/api/v1/establishments/" + demoSlug
	fmt.Fprintf(out, `
Demo establishment %q is served (local date %s).
API key (shown once): %s

  curl -s %s %s
  curl -s %s %s/hours
  curl -s %s '%s/menus?locale=en'
  curl -s %s %s/menus/la-carte
  curl -s %s '%s/menus/menu-du-jour?locale=en'
  curl -s %s %s/menus/vins
  curl -si '%s/r/master_menu?establishment=%s'
  curl -si '%s/r/menus?establishment=%s&menu_type=la-carte&locale=en'
  curl -sI %s    # the unified card, uploaded: served by this service

Admin API: %s (Authorization: Bearer %s)
  publisher admin get %s

`, demoSlug, today, key, h, api, h, api, h, api, h, api, h, api, h, api, base, demoSlug, base, demoSlug, cardURL, m.AdminURL, m.AdminToken, demoSlug)
	return nil
}

// uploadDemoFiles stores a generated PDF as the unified card and generated images as the pages
// of "la-carte", so that the redirects land on files the service itself serves; the other menus
// keep their external URLs, the other way of giving files.
func (m *Main) uploadDemoFiles(ctx context.Context, snap *domain.EstablishmentInput) (cardURL string, err error) {
	card, err := m.Commands.UploadFile(ctx, demoPDF("Chez Marcel", "La carte complete", "Entrees, plats, desserts et vins"))
	if err != nil {
		return "", fmt.Errorf("upload the demo's unified card: %w", err)
	}
	snap.MasterMenuURL = ptr(string(card.Digest))
	blue, cream := color.RGBA{0x1f, 0x3a, 0x5f, 0xff}, color.RGBA{0xf4, 0xec, 0xd8, 0xff}
	red := color.RGBA{0x9b, 0x23, 0x35, 0xff}
	pages := map[string][][]byte{"fr": {demoPNG(blue, cream), demoPNG(cream, blue)}, "en": {demoPNG(red, cream)}}
	for i := range snap.MenuTypes {
		if snap.MenuTypes[i].Slug != "la-carte" {
			continue
		}
		for j := range snap.MenuTypes[i].Versions {
			for k, a := range snap.MenuTypes[i].Versions[j].Assets {
				urls := []string{}
				for _, p := range pages[a.LanguageScope] {
					f, err := m.Commands.UploadFile(ctx, p)
					if err != nil {
						return "", fmt.Errorf("upload the demo's menu pages: %w", err)
					}
					urls = append(urls, string(f.Digest))
				}
				snap.MenuTypes[i].Versions[j].Assets[k].URLs = urls
			}
		}
	}
	return card.URL, nil
}

func ptr[T any](v T) *T { return &v }

func mustLocation(tz string) *time.Location {
	e := domain.Establishment{TimeZone: tz}
	return e.Location()
}

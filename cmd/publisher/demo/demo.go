package demo

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"image/color"
	"io"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
)

// Slug is the slug of the sample establishment.
const Slug = "chez-marcel"

// Config is what the demo needs of the running service.
type Config struct {
	// Sample is the sample establishment, as the admin API takes it.
	Sample   []byte
	Commands *app.Commands
	// Today is the local date of the establishments, the date the daily menu starts.
	Today func(*time.Location) domain.LocalDate
	// Served returns once the record at seq of establishment slug is served.
	Served func(ctx context.Context, slug domain.Slug, seq uint64) error
	// PublicURL is the base URL of the read API; AdminURL and AdminToken reach the admin API.
	PublicURL, AdminURL, AdminToken string
}

// Load imports the sample establishment, makes sure it has a key to show, waits until it is
// served, and prints ready-to-paste requests to out.
func Load(ctx context.Context, cfg Config, out io.Writer) error {
	snap, err := domain.ParseInput(bytes.NewReader(cfg.Sample))
	if err != nil {
		return err
	}
	// The daily menu is dated today and tomorrow, whatever the date, so the demo always has one.
	today := cfg.Today(location(snap.TimeZone))
	for i := range snap.MenuTypes {
		if snap.MenuTypes[i].Rotation != string(domain.RotationDaily) {
			continue
		}
		for j := range snap.MenuTypes[i].Versions {
			d := today.AddDays(j).String()
			snap.MenuTypes[i].Versions[j].ID, snap.MenuTypes[i].Versions[j].ReferenceDate = d, &d
		}
	}
	cardURL, err := uploadFiles(ctx, cfg.Commands, &snap)
	if err != nil {
		return err
	}
	res, err := cfg.Commands.Import(ctx, app.Request{Slug: Slug}, snap)
	if err != nil {
		return err
	}
	if res.APIKey == "" {
		// Already imported by an earlier run: keys are shown once, so issue a new one.
		if res, err = cfg.Commands.RegenerateKey(ctx, app.Request{Slug: Slug}); err != nil {
			return err
		}
	}
	key := res.APIKey
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := cfg.Served(wctx, Slug, res.Version); err != nil {
		return fmt.Errorf("wait for the demo to be served: %w", err)
	}
	base := cfg.PublicURL
	h := fmt.Sprintf("-H 'X-Api-Key: %s'", key)
	api := base + "/api/v1/establishments/" + Slug
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

`, Slug, today, key, h, api, h, api, h, api, h, api, h, api, h, api, base, Slug, base, Slug, cardURL, cfg.AdminURL, cfg.AdminToken, Slug)
	return nil
}

// uploadFiles stores a generated PDF as the unified card and generated images as the pages
// of "la-carte", so that the redirects land on files the service itself serves; the other menus
// keep their external URLs, the other way of giving files.
func uploadFiles(ctx context.Context, commands *app.Commands, snap *domain.EstablishmentInput) (cardURL string, err error) {
	card, err := commands.UploadFile(ctx, PDF("Chez Marcel", "La carte complete", "Entrees, plats, desserts et vins"))
	if err != nil {
		return "", fmt.Errorf("upload the demo's unified card: %w", err)
	}
	snap.MasterMenuURL = new(string(card.Digest))
	blue, cream := color.RGBA{0x1f, 0x3a, 0x5f, 0xff}, color.RGBA{0xf4, 0xec, 0xd8, 0xff}
	red := color.RGBA{0x9b, 0x23, 0x35, 0xff}
	pages := map[string][][]byte{"fr": {PNG(blue, cream), PNG(cream, blue)}, "en": {PNG(red, cream)}}
	for i := range snap.MenuTypes {
		if snap.MenuTypes[i].Slug != "la-carte" {
			continue
		}
		for j := range snap.MenuTypes[i].Versions {
			for k, a := range snap.MenuTypes[i].Versions[j].Assets {
				urls := []string{}
				for _, p := range pages[a.LanguageScope] {
					f, err := commands.UploadFile(ctx, p)
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

// location is the time zone tz as the domain resolves it.
func location(tz string) *time.Location {
	e := domain.Establishment{TimeZone: tz}
	return e.Location()
}

package demo

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"image/color"
	"io"
	"slices"
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
	// KeyFile keeps the key the demo issued, for a later start to show it again.
	KeyFile string
}

// Load loads the sample establishment into an empty store: it imports it, keeps its key in
// KeyFile, waits until it is served, and prints ready-to-paste requests to out. A store that holds
// establishments already is left as it is (see showAgain).
func Load(ctx context.Context, cfg Config, out io.Writer) error {
	slugs, err := cfg.Commands.List(ctx)
	if err != nil {
		return err
	}
	if len(slugs) > 0 {
		return showAgain(ctx, cfg, len(slugs), slices.Contains(slugs, Slug), out)
	}
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
		return errors.New("the import of the sample issued no api key")
	}
	if err := saveKey(cfg.KeyFile, res.APIKey); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := cfg.Served(wctx, Slug, res.Version); err != nil {
		return fmt.Errorf("wait for the demo to be served: %w", err)
	}
	fmt.Fprintf(out, "\nDemo establishment %q is served (local date %s).\nAPI key: %s\n(kept in %s: later starts of the demo show it again)\n\n",
		Slug, today, res.APIKey, cfg.KeyFile)
	printRequests(out, cfg, res.APIKey, cardURL)
	return nil
}

// printRequests prints the requests that show the sample establishment with key, the unified
// card's among them when there is one, and how to reach the admin API.
func printRequests(out io.Writer, cfg Config, key domain.APIKey, cardURL string) {
	base := cfg.PublicURL
	h := fmt.Sprintf("-H 'X-Api-Key: %s'", key)
	api := base + "/api/v1/establishments/" + Slug
	fmt.Fprintf(out, `  curl -s %s %s
  curl -s %s %s/hours
  curl -s %s '%s/menus?locale=en'
  curl -s %s %s/menus/la-carte
  curl -s %s '%s/menus/menu-du-jour?locale=en'
  curl -s %s %s/menus/vins
  curl -s %s '%s/jsonld?locale=en'    # schema.org JSON-LD, for search engines
  curl -si '%s/r/master_menu?establishment=%s'
  curl -si '%s/r/menus?establishment=%s&menu_type=la-carte&locale=en'
`, h, api, h, api, h, api, h, api, h, api, h, api, h, api, base, Slug, base, Slug)
	if cardURL != "" {
		fmt.Fprintf(out, "  curl -sI %s    # the unified card, uploaded: served by this service\n", cardURL)
	}
	fmt.Fprintf(out, "\nAPI reference, with every operation and answer: %s/docs\n", base)
	printAdmin(out, cfg, "publisher admin get "+Slug)
}

// printAdmin prints how to reach the admin API, with an example command.
func printAdmin(out io.Writer, cfg Config, example string) {
	fmt.Fprintf(out, "\nAdmin API: %s (Authorization: Bearer %s), its reference at %[1]s/admin/docs\n  %s\n\n", cfg.AdminURL, cfg.AdminToken, example)
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

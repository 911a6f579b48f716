// Package sample generates realistic, varied establishments in the import format, deterministically
// from a seed: the same seed, index and date always give the same document. The scale benchmark
// imports them by the hundred thousand; tests use a few hundred.
//
// The mix: sizes from a one-card café of a few items to a brasserie of about 200; five time zones; a daily
// menu on two thirds of the establishments, some weekly and monthly menus, uploaded menus, English
// translations on about half of the text, upcoming closures, some drafts and some with the public
// API disabled.
package sample

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/opencarte/publisher/domain"
)

// Zones are the time zones establishments are spread over, from UTC−8 to UTC+11.
var Zones = []string{"Europe/Paris", "America/New_York", "America/Los_Angeles", "Asia/Tokyo", "Australia/Sydney"}

// zoneWeights is the share of establishments in each of Zones, in percent.
var zoneWeights = []int{50, 15, 15, 10, 10}

// Establishment returns the import document of establishment i of seed, with dated menus around
// today. Its slug ends with i, so the slugs of one seed are distinct.
func Establishment(seed uint64, i int, today domain.LocalDate) domain.EstablishmentInput {
	g := gen{r: rand.New(rand.NewPCG(seed, uint64(i)+0x9e3779b97f4a7c15)), today: today}
	return g.establishment(i)
}

// DateDependent reports whether the public documents of s change with the calendar: upcoming
// exceptional hours, or a web menu rotating by date.
func DateDependent(s domain.EstablishmentInput) bool {
	if len(s.SpecialHours) > 0 {
		return true
	}
	for _, mt := range s.MenuTypes {
		if mt.WebDelivery != nil && *mt.WebDelivery && mt.Rotation != "" && mt.Rotation != string(domain.RotationNone) {
			return true
		}
	}
	return false
}

type gen struct {
	r      *rand.Rand
	today  domain.LocalDate
	nextID int64
}

// size classes: how many menu types and items an establishment has.
type size struct {
	name         string
	types        int // generated menu types besides the daily menu
	sections     [2]int
	itemsPerSect [2]int
}

var sizes = []struct {
	weight int
	size
}{
	{45, size{"cafe", 1, [2]int{1, 2}, [2]int{4, 6}}},
	{35, size{"bistrot", 2, [2]int{2, 3}, [2]int{4, 6}}},
	{15, size{"restaurant", 3, [2]int{3, 4}, [2]int{5, 7}}},
	{5, size{"brasserie", 4, [2]int{5, 7}, [2]int{7, 10}}},
}

func (g *gen) pick(weights []int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	n := g.r.IntN(total)
	for i, w := range weights {
		if n < w {
			return i
		}
		n -= w
	}
	return len(weights) - 1
}

func (g *gen) chance(percent int) bool { return g.r.IntN(100) < percent }

func (g *gen) between(r [2]int) int { return r[0] + g.r.IntN(r[1]-r[0]+1) }

func (g *gen) of(list []string) string { return list[g.r.IntN(len(list))] }

func ptr[T any](v T) *T { return &v }

func (g *gen) establishment(i int) domain.EstablishmentInput {
	weights := make([]int, len(sizes))
	for k, s := range sizes {
		weights[k] = s.weight
	}
	sz := sizes[g.pick(weights)].size
	kind := g.of(kinds[sz.name])
	name := fmt.Sprintf("%s %s", kind, g.of(placeNames))
	slug := fmt.Sprintf("%s-%d", slugify(name), i)
	host := fmt.Sprintf("%s.example.fr", slug)
	s := domain.EstablishmentInput{
		Slug:     slug,
		Status:   "active",
		TimeZone: Zones[g.pick(zoneWeights)],
		Settings: &domain.SettingsInput{
			PublicAPIEnabled:    ptr(!g.chance(10)),
			MenuRedirectEnabled: ptr(g.chance(50)),
		},
		Name:           name,
		BusinessType:   businessTypes[sz.name],
		PublicCategory: ptr(g.of(categories)),
		WebsiteURL:     ptr("https://" + host),
		Contact: &domain.ContactInput{
			Email:       ptr("contact@" + host),
			PhoneNumber: ptr(fmt.Sprintf("+331%08d", g.r.IntN(100_000_000))),
		},
		Location: &domain.LocationInput{
			Address:   ptr(fmt.Sprintf("%d %s, %05d %s", 1+g.r.IntN(120), g.of(streets), 10000+g.r.IntN(85000), g.of(cities))),
			Latitude:  ptr(float64(g.r.IntN(180_000_000)-90_000_000) / 1e6),
			Longitude: ptr(float64(g.r.IntN(360_000_000)-180_000_000) / 1e6),
		},
		BusinessHours: g.hours(),
	}
	if g.chance(5) {
		s.Status = "draft"
	}
	if g.chance(70) {
		s.Description = ptr(g.sentence(8, 20))
	}
	if g.chance(60) {
		s.MenuURL = ptr("https://" + host + "/carte")
	}
	if g.chance(50) {
		s.LogoURL = ptr("https://cdn." + host + "/logo.png")
	}
	if g.chance(30) {
		s.BusinessHoursSummary = ptr("Du mardi au samedi, midi et soir")
	}
	if g.chance(15) {
		start := g.today.AddDays(3 + g.r.IntN(40))
		s.SpecialHours = append(s.SpecialHours, domain.SpecialHoursInput{
			StartDate: start.String(), EndDate: ptr(start.AddDays(1 + g.r.IntN(10)).String()), Closed: ptr(true),
		})
	}
	if g.chance(50) {
		s.MasterMenuURL = ptr("https://cdn." + host + "/carte-complete.pdf")
	}
	s.MenuTypes = g.menuTypes(sz, host)
	return s
}

func (g *gen) hours() []domain.OpeningRangeInput {
	days := []string{"lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi", "dimanche"}
	var out []domain.OpeningRangeInput
	closed := g.r.IntN(7)
	for d, day := range days {
		if d == closed {
			continue
		}
		out = append(out, domain.OpeningRangeInput{OpenDay: day, OpenTime: "12:00", CloseDay: ptr(day), CloseTime: ptr("14:30")})
		if g.chance(80) {
			out = append(out, domain.OpeningRangeInput{OpenDay: day, OpenTime: "19:00", CloseDay: ptr(day), CloseTime: ptr("22:30")})
		}
	}
	return out
}

func (g *gen) menuTypes(sz size, host string) []domain.MenuTypeInput {
	var out []domain.MenuTypeInput
	for t := 0; t < sz.types; t++ {
		slug := []string{"la-carte", "les-desserts", "la-carte-des-vins", "les-cocktails"}[t]
		out = append(out, domain.MenuTypeInput{
			Slug: slug, Name: strings.ReplaceAll(strings.ToUpper(slug[:1])+slug[1:], "-", " "),
			Kind: "card", Source: "generated", WebDelivery: ptr(true), Rotation: "none",
			Versions: []domain.VersionInput{g.version("v1", nil, sz, host, slug)},
		})
	}
	// Two thirds serve a daily menu: yesterday's, today's, tomorrow's and the day after's, so
	// that the next two days change their documents.
	if g.chance(67) {
		var versions []domain.VersionInput
		for d := -1; d <= 2; d++ {
			date := g.today.AddDays(d).String()
			versions = append(versions, g.version(date, &date, size{sections: [2]int{2, 2}, itemsPerSect: [2]int{2, 2}}, host, "menu-du-jour"))
		}
		out = append(out, domain.MenuTypeInput{Slug: "menu-du-jour", Name: "Menu du jour", Kind: "menu", Source: "generated",
			WebDelivery: ptr(true), Rotation: "daily", Versions: versions})
	}
	if g.chance(15) {
		date := g.today.String()
		out = append(out, domain.MenuTypeInput{Slug: "menu-de-la-semaine", Name: "Menu de la semaine", Kind: "menu", Source: "generated",
			WebDelivery: ptr(true), Rotation: "weekly",
			Versions: []domain.VersionInput{g.version("semaine", &date, size{sections: [2]int{2, 3}, itemsPerSect: [2]int{2, 3}}, host, "semaine")}})
	}
	if g.chance(10) {
		date := fmt.Sprintf("%04d-%02d-01", g.today.Year, g.today.Month)
		out = append(out, domain.MenuTypeInput{Slug: "menu-du-mois", Name: "Menu du mois", Kind: "menu", Source: "generated",
			WebDelivery: ptr(true), Rotation: "monthly",
			Versions: []domain.VersionInput{g.version("mois", &date, size{sections: [2]int{3, 3}, itemsPerSect: [2]int{2, 3}}, host, "mois")}})
	}
	if g.chance(20) {
		assets := []domain.AssetInput{{LanguageScope: "fr_en", URLs: g.pages(host, "cocktails", 1+g.r.IntN(3))}}
		if g.chance(40) {
			assets = []domain.AssetInput{
				{LanguageScope: "fr", URLs: g.pages(host, "boissons-fr", 1+g.r.IntN(3))},
				{LanguageScope: "en", URLs: g.pages(host, "drinks-en", 1+g.r.IntN(2))},
			}
		}
		out = append(out, domain.MenuTypeInput{Slug: "boissons", Name: "Boissons", Kind: "card", Source: "uploaded",
			WebDelivery: ptr(true), Rotation: "none",
			Versions: []domain.VersionInput{{ID: "courante", Assets: assets}}})
	}
	if g.chance(10) {
		out = append(out, domain.MenuTypeInput{Slug: "menu-groupes", Name: "Menu groupes", Kind: "menu", Source: "generated",
			WebDelivery: ptr(false), Rotation: "none",
			Versions: []domain.VersionInput{g.version("v1", nil, size{sections: [2]int{2, 2}, itemsPerSect: [2]int{2, 3}}, host, "groupes")}})
	}
	return out
}

func (g *gen) pages(host, name string, n int) []string {
	out := make([]string, n)
	for p := range out {
		out[p] = fmt.Sprintf("https://cdn.%s/%s-%d.jpg", host, name, p+1)
	}
	return out
}

func (g *gen) version(id string, date *string, sz size, host, file string) domain.VersionInput {
	v := domain.VersionInput{ID: id, ReferenceDate: date}
	if g.chance(40) {
		v.Assets = []domain.AssetInput{{LanguageScope: g.of([]string{"fr", "en", "fr_en"}), URLs: g.pages(host, file, 1)}}
	}
	sections := g.between(sz.sections)
	for k := 0; k < sections; k++ {
		sec := domain.SectionInput{Name: g.text(sectionNames[k%len(sectionNames)]), Position: ptr(k + 1)}
		for n := g.between(sz.itemsPerSect); n > 0; n-- {
			sec.Items = append(sec.Items, g.item())
		}
		v.Sections = append(v.Sections, sec)
	}
	return v
}

func (g *gen) item() domain.ItemInput {
	g.nextID++
	it := domain.ItemInput{
		ID:                 ptr(g.nextID),
		Name:               g.text([2]string{g.dish(), g.dishEN()}),
		ALaCarte:           ptr(!g.chance(15)),
		GlutenFree:         g.chance(20),
		Vegetarian:         g.chance(30),
		ChefRecommendation: g.chance(10),
	}
	it.Vegan = it.Vegetarian && g.chance(40)
	if *it.ALaCarte {
		it.Price = ptr(fmt.Sprintf("%d.%02d", 4+g.r.IntN(40), []int{0, 50, 90, 0}[g.r.IntN(4)]))
	}
	if g.chance(60) {
		it.Description = g.text([2]string{g.sentence(6, 14), "Served with seasonal vegetables and a house sauce"})
	}
	return it
}

// text returns a translatable text: French always, English about half the time.
func (g *gen) text(t [2]string) *domain.TextInput {
	out := &domain.TextInput{FR: ptr(t[0])}
	if g.chance(50) {
		out.EN = ptr(t[1])
	}
	return out
}

func (g *gen) dish() string {
	return fmt.Sprintf("%s %s, %s", g.of(dishes), g.of(dishStyles), g.of(sides))
}

func (g *gen) dishEN() string { return fmt.Sprintf("%s, %s", g.of(dishesEN), g.of(sidesEN)) }

func (g *gen) sentence(min, max int) string {
	n := min + g.r.IntN(max-min+1)
	words := make([]string, n)
	for k := range words {
		words[k] = g.of(vocabulary)
	}
	words[0] = strings.ToUpper(words[0][:1]) + words[0][1:]
	return strings.Join(words, " ") + "."
}

func slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

var (
	kinds = map[string][]string{
		"cafe":       {"Café", "Salon de thé", "Boulangerie", "Bar"},
		"bistrot":    {"Bistrot", "Bar à vin", "Crêperie", "Cave"},
		"restaurant": {"Restaurant", "Auberge", "Table"},
		"brasserie":  {"Brasserie", "Grande brasserie"},
	}
	businessTypes = map[string]string{"cafe": "cafe", "bistrot": "bar", "restaurant": "restaurant", "brasserie": "restaurant"}
	placeNames    = []string{"du Port", "des Halles", "de la Gare", "du Marché", "des Arts", "Saint-Martin", "du Parc", "des Vignes", "de la Place", "du Théâtre", "des Quais", "du Moulin"}
	categories    = []string{"Bistrot", "Brasserie", "Cuisine du marché", "Crêperie", "Cave à manger", "Salon de thé", "Bar à cocktails"}
	streets       = []string{"rue des Martyrs", "avenue Jean-Jaurès", "place de la République", "quai de la Loire", "rue du Faubourg", "boulevard Voltaire"}
	cities        = []string{"Paris", "Lyon", "Nantes", "Bordeaux", "Lille", "Marseille", "Toulouse", "Strasbourg"}
	sectionNames  = [][2]string{{"Entrées", "Starters"}, {"Plats", "Mains"}, {"Desserts", "Desserts"}, {"Fromages", "Cheeses"}, {"À partager", "To share"}, {"Boissons", "Drinks"}, {"Vins", "Wines"}}
	dishes        = []string{"Velouté de potimarron", "Joue de bœuf", "Risotto aux cèpes", "Tarte Tatin", "Œuf parfait", "Filet de bar", "Magret de canard", "Crème brûlée", "Salade de chèvre", "Blanquette de veau", "Poireaux vinaigrette", "Île flottante"}
	dishStyles    = []string{"au four", "braisé", "rôti", "à la plancha", "confit", "maison", "de saison"}
	sides         = []string{"purée maison", "carottes glacées", "jus corsé", "crème crue", "noisettes torréfiées", "herbes du jardin"}
	dishesEN      = []string{"Pumpkin soup", "Beef cheek", "Porcini risotto", "Tarte Tatin", "Slow-cooked egg", "Sea bass fillet", "Duck breast", "Crème brûlée"}
	sidesEN       = []string{"homemade mash", "glazed carrots", "rich jus", "raw cream", "roasted hazelnuts"}
	vocabulary    = []string{"cuisine", "du", "marché", "produits", "frais", "saison", "vins", "nature", "desserts", "maison", "terrasse", "chaleureuse", "au", "cœur", "quartier", "chef", "local", "et", "de", "la"}
)

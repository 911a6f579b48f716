package domain

// Export returns the establishment's content in the import format, so that what an
// administrator reads back can be edited and imported again. Importing it produces no event.
func (e *Establishment) Export() EstablishmentInput {
	api, redirect := e.PublicAPIEnabled, e.MenuRedirectEnabled
	id := e.Identity
	s := EstablishmentInput{
		Slug:                 string(e.Slug),
		Status:               string(e.Status),
		TimeZone:             e.TimeZone,
		Settings:             &SettingsInput{PublicAPIEnabled: &api, MenuRedirectEnabled: &redirect},
		Name:                 id.Name,
		Description:          id.Description,
		BusinessType:         string(id.BusinessType),
		PublicCategory:       id.PublicCategory,
		WebsiteURL:           id.WebsiteURL,
		MenuURL:              id.MenuURL,
		Contact:              &ContactInput{Email: id.Email, PhoneNumber: id.PhoneNumber},
		Location:             &LocationInput{Address: id.Address, Latitude: id.Latitude, Longitude: id.Longitude},
		LogoURL:              id.LogoURL,
		BusinessHoursSummary: e.Hours.Summary,
		BusinessHours:        []OpeningRangeInput{},
		SpecialHours:         []SpecialHoursInput{},
		MasterMenuURL:        e.MasterMenuURL,
		MenuTypes:            []MenuTypeInput{},
	}
	for _, r := range e.Hours.Ranges {
		in := OpeningRangeInput{OpenDay: r.OpenDay.String(), OpenTime: r.OpenTime.String()}
		if r.CloseDay != nil {
			in.CloseDay = ptr(r.CloseDay.String())
		}
		if r.CloseTime != nil {
			in.CloseTime = ptr(r.CloseTime.String())
		}
		s.BusinessHours = append(s.BusinessHours, in)
	}
	for _, sh := range e.SpecialHours {
		in := SpecialHoursInput{StartDate: sh.StartDate.String(), Closed: ptr(sh.Closed)}
		if sh.EndDate != nil {
			in.EndDate = ptr(sh.EndDate.String())
		}
		if sh.OpenTime != nil {
			in.OpenTime = ptr(sh.OpenTime.String())
		}
		if sh.CloseTime != nil {
			in.CloseTime = ptr(sh.CloseTime.String())
		}
		s.SpecialHours = append(s.SpecialHours, in)
	}
	for _, mt := range e.MenuTypes {
		in := MenuTypeInput{
			Slug: string(mt.Slug), Name: mt.Name, Kind: string(mt.Kind), Source: string(mt.Source),
			WebDelivery: ptr(mt.WebDelivery), Rotation: string(mt.Rotation), Versions: []VersionInput{},
		}
		for _, v := range mt.Versions {
			in.Versions = append(in.Versions, v.input())
		}
		s.MenuTypes = append(s.MenuTypes, in)
	}
	return s
}

func (v MenuVersion) input() VersionInput {
	in := VersionInput{ID: string(v.ID), Assets: []AssetInput{}, Sections: []SectionInput{}}
	if v.ReferenceDate != nil {
		in.ReferenceDate = ptr(v.ReferenceDate.String())
	}
	for _, a := range v.Assets {
		in.Assets = append(in.Assets, AssetInput{LanguageScope: string(a.LanguageScope), URLs: a.URLs})
	}
	for _, sec := range v.Sections {
		si := SectionInput{Name: sec.Name.input(), Position: ptr(sec.Position), Items: []ItemInput{}}
		for _, it := range sec.Items {
			ii := ItemInput{
				ID: ptr(it.ID), Name: it.Name.input(), ALaCarte: ptr(it.ALaCarte),
				GlutenFree: it.GlutenFree, Vegetarian: it.Vegetarian, Vegan: it.Vegan, ChefRecommendation: it.ChefRecommendation,
			}
			if it.Description != nil {
				ii.Description = it.Description.input()
			}
			if it.Price != nil {
				ii.Price = ptr(string(*it.Price))
			}
			si.Items = append(si.Items, ii)
		}
		in.Sections = append(in.Sections, si)
	}
	return in
}

func (t Text) input() *TextInput {
	in := &TextInput{FR: ptr(t.FR)}
	if t.EN != "" {
		in.EN = ptr(t.EN)
	}
	return in
}

func ptr[T any](v T) *T { return &v }

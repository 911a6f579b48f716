package projections

import (
	"math"

	"github.com/opencarte/publisher/domain"
)

// establishmentBody holds the fields of the Establishment resource that follow content_revision,
// in the order of the specification. Every pointer is a "T | null" field: always present.
type establishmentBody struct {
	Name           string       `json:"name"`
	Description    *string      `json:"description"`
	BusinessType   string       `json:"business_type"`
	PublicCategory *string      `json:"public_category"`
	Category       *string      `json:"category"`
	WebsiteURL     *string      `json:"website_url"`
	MenuURL        *string      `json:"menu_url"`
	Contact        contactBody  `json:"contact"`
	Location       locationBody `json:"location"`
	LogoURL        *string      `json:"logo_url"`
}

type contactBody struct {
	Email       *string `json:"email"`
	PhoneNumber *string `json:"phone_number"`
}

type locationBody struct {
	Address   *string  `json:"address"`
	Latitude  *float64 `json:"latitude"`
	Longitude *float64 `json:"longitude"`
}

// defaultBusinessType is what an establishment without a business type is: the specification
// says existing establishments were initialised to restaurant, and the field is never null.
const defaultBusinessType = "restaurant"

func establishmentDoc(e *domain.Establishment) establishmentBody {
	id := e.Identity
	bt := string(id.BusinessType)
	if bt == "" {
		bt = defaultBusinessType
	}
	return establishmentBody{
		Name:           id.Name,
		Description:    id.Description,
		BusinessType:   bt,
		PublicCategory: id.PublicCategory,
		Category:       id.PublicCategory, // deprecated alias, same value
		WebsiteURL:     id.WebsiteURL,
		MenuURL:        id.MenuURL,
		Contact:        contactBody{Email: id.Email, PhoneNumber: id.PhoneNumber},
		Location: locationBody{
			Address:   id.Address,
			Latitude:  finite(id.Latitude),
			Longitude: finite(id.Longitude),
		},
		LogoURL: id.LogoURL,
	}
}

// finite returns f, or nil when f is not a finite number (which JSON cannot represent).
func finite(f *float64) *float64 {
	if f == nil || math.IsNaN(*f) || math.IsInf(*f, 0) {
		return nil
	}
	return f
}

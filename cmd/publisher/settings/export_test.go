package settings

// Texts returns the message table of lang, for the tests to compare the languages' tables.
func Texts(lang string) map[string]string { return tables[lang] }

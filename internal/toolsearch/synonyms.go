package toolsearch

import "strings"

// synonymGroups are words that users and tool authors use for the same
// thing, mostly the verbs tools are named with: an agent asks to "fetch
// the page" of a tool called get_page, to "remove" what delete_entity
// deletes. A query word brings its group's other words in at a lower
// weight (Options.SynonymWeight). Groups are kept narrow: a word in a
// wide group matches everything.
func synonymGroups() []string {
	return []string{
		"get fetch retrieve read obtain show view display load",
		"list enumerate browse",
		"create add new make insert generate",
		"delete remove destroy erase drop trash purge",
		"update edit modify change set patch alter",
		"search find query lookup locate look seek discover",
		"run execute exec invoke launch trigger start",
		"send post publish notify tell",
		"write save store put persist",
		"upload attach",
		"download export",
		"stop end terminate cancel kill halt abort",
		"navigate go visit open",
		"screenshot capture snapshot",
		"click press tap",
		"type fill enter input",
		"file document doc",
		"directory folder dir",
		"repo repository",
		"issue ticket bug",
		"pr pull merge mr",
		"comment reply",
		"user member person people account who",
		"message chat dm",
		"database db",
		"email mail inbox",
		"image picture photo",
		"error exception failure crash",
		"deploy release ship",
		"calendar schedule meeting event",
		"summary summarize overview",
		"link url address",
		"web internet online website site",
		"memory remember recall",
		"relation relationship connection",
		"observation fact note",
		"think reason reflect",
		"page webpage",
		"table spreadsheet sheet",
		"record row entry",
		"field column",
		"pipeline workflow build job",
		"log logs trace",
		"weather forecast",
		"restart reboot",
		"kill terminate",
		"snapshot backup",
		"metric stat statistic usage load",
		"size disk storage space",
		"ssl https certificate tls",
		"campaign newsletter",
		"mailbox email",
		"cron schedule nightly recurring",
		"process program",
		"fork copy clone duplicate",
		"review approve",
		"html source markup",
		"javascript js script",
		"billing payment charge invoice subscription",
		"shop store ecommerce",
		"sum plus total",
		"elevation altitude height",
		"distance far",
		"commit change",
		"history recent",
		"monitor watch alert",
		"pdf print",
		"project repository",
		"docs documentation",
		"thread conversation",
		"emoji reaction",
		"port network",
		"deployment deploy",
		"namespace cluster",
		"index speed",
		"query filter",
		"paper article study",
		"vps server machine vm",
		"domain dns",
		"kubernetes k8s kube kubectl",
		"mongodb mongo",
		"rollback revert undo",
		"artifact output",
		"status green pass passing",
		"enable activate",
		"disable deactivate",
		"schema structure",
		"container pod",
		"execute evaluate eval",
		"console log",
		"auto automatic automatically",
		"where location place",
	}
}

// synonyms maps each stemmed word of synonymGroups to the other stemmed
// words of its groups.
func synonyms() map[string][]string {
	out := make(map[string][]string)
	for _, g := range synonymGroups() {
		var stems []string
		for _, w := range strings.Fields(g) {
			stems = append(stems, stem(w))
		}
		for i, s := range stems {
			for j, o := range stems {
				if i != j && s != o {
					out[s] = append(out[s], o)
				}
			}
		}
	}
	return out
}

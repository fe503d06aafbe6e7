package search

// isStopWord reports lowercase words that carry no meaning for finding a
// tool: English function words plus the conversational filler models and
// users wrap requests in ("could you please help me ..."). Verbs that name
// tool actions (get, show, make, find, list) are deliberately not here.
func isStopWord(w string) bool {
	_, ok := stopWords[w]
	return ok
}

// stopWords is read-only after package initialisation.
var stopWords = func() map[string]struct{} {
	m := make(map[string]struct{}, len(stopWordList))
	for _, w := range stopWordList {
		m[w] = struct{}{}
	}
	return m
}()

var stopWordList = []string{
	// English function words.
	"a", "about", "above", "after", "again", "against", "all", "am", "an", "and",
	"any", "are", "as", "at", "be", "because", "been", "before", "being", "below",
	"between", "both", "but", "by", "did", "do", "does", "doing", "down", "during",
	"each", "few", "for", "from", "further", "had", "has", "have", "having", "he",
	"her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if",
	"in", "into", "is", "it", "its", "itself", "me", "more", "most", "my", "myself",
	"no", "nor", "not", "of", "off", "on", "once", "only", "or", "other", "ought",
	"our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so",
	"some", "such", "than", "that", "the", "their", "theirs", "them", "themselves",
	"then", "there", "these", "they", "this", "those", "through", "to", "too",
	"under", "until", "up", "very", "was", "we", "were", "what", "when", "where",
	"which", "while", "who", "whom", "why", "with", "you", "your", "yours",
	"yourself", "yourselves", "s", "t", "d", "ll", "m", "re", "ve", "don", "doesn",
	"didn", "isn", "aren", "wasn", "weren", "won", "wouldn", "couldn", "shouldn",
	"can", "cannot", "could", "would", "will", "shall", "may", "might", "must",
	"also", "just", "etc", "e", "g", "eg", "ie", "via", "per", "within", "without",
	"whether", "either", "neither", "every", "another", "upon", "onto", "yet",
	// Conversational filler.
	"please", "kindly", "want", "wanna", "need", "needs", "like", "help", "tell",
	"know", "let", "us", "hi", "hey", "hello", "thanks", "thank", "sure", "ok",
	"okay", "maybe", "really", "actually", "something", "anything", "someone",
	"somebody", "thing", "things", "way", "able", "lot", "lots",
}
